#!/usr/bin/env python3
"""The VRAM cache vs the best streaming loader setting, on the GPU machine, in one run.

Cases (files written here, as a user would have them):
  tabular   the seeds' case: 200,000 x 256 float32 features (.npy), MLP [512, 512], batch 1024
  cifar     CIFAR-10-sized: 50,000 x 3x32x32 uint8 images (.npy), ResNet-18, bf16, channels_last,
            batch 256, random crop (padding 4) and flip on the GPU
For each: `gputrain profile` sweeps the loader (data.cache none) to find its best thread count,
then `gputrain profile --step --json` trains --steps steps with data.cache vram and with that best
loader setting, --runs times each, alternating. Reported: epoch time (samples / median samples/s)
and the data stall, on the host's clock and on the GPU's (`profile --step` times the feed with CUDA
events too: the host's figure also holds launches that blocked on a full queue). Then the gather
bandwidth: the sweep's vram cache at the training batch, its gather alone as the feed makes it
(`gather_gbps` over `gather_rows` samples, several batches per gather: bytes of gathered samples
per second, device synchronised) against the device-to-device copy bandwidth torch measures here
(bytes copied per second, one way), and PyTorch eager's index_select of the same samples timed
the same way (the peer).
Goals (issue 5): data stall < 2 % with the cache; gathering >= 50 % of device-to-device bandwidth.

Usage: bench/cache_vs_loader.py [--runs 3] [--steps 100] [--cases tabular,cifar] [--check]
(--check: the same steps on the CPU with small data, for the test suite.)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPUTRAIN = os.path.join(ROOT, os.environ.get("GPUTRAIN_BUILD", "build"), "bin", "gputrain")


def gputrain(args):
    result = subprocess.run([GPUTRAIN, "profile", *args], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("gputrain profile failed:\n" + result.stderr)
    return json.loads(result.stdout)


def median_gbps(device, nbytes, calls, work):
    """GB/s of `work`, which moves `nbytes` a call: one warm-up call (kernel load, allocator), then
    the median of 5 timings of `calls` calls, synchronised around each (as `gputrain profile`)."""
    def sync():
        if device == "cuda":
            torch.cuda.synchronize()

    work()
    rates = []
    for _ in range(5):
        sync()
        start = time.perf_counter()
        for _ in range(calls):
            work()
        sync()
        rates.append(calls * nbytes / 1e9 / (time.perf_counter() - start))
    return statistics.median(rates)


def d2d_gbps():
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    return median_gbps("cuda", x.numel(), 1, lambda: y.copy_(x))


def index_select_gbps(x_path, y_path, rows, device):
    """The peer: PyTorch eager gathering the same samples from GPU-resident tables (index_select of
    inputs and targets, the seeds' VRAM cache and what gputrain called before its own kernel),
    timed as `gputrain profile` times its gather: `rows` random samples, 10 gathers back to back
    between synchronisations, median of 5, bytes of samples per second. Python's launch cost is in
    it, as LibTorch's is in gputrain's."""
    inputs = torch.from_numpy(np.load(x_path)).to(device)
    targets = torch.from_numpy(np.load(y_path)).to(device)
    index = torch.randperm(len(inputs), generator=torch.Generator().manual_seed(0))[:rows].to(device)
    sample_bytes = (inputs.nbytes + targets.nbytes) / len(inputs)
    rate = median_gbps(device, rows * sample_bytes, 10, lambda: (inputs.index_select(0, index), targets.index_select(0, index)))
    del inputs, targets, index
    if device == "cuda":
        torch.cuda.empty_cache()  # the next gputrain processes get this GPU's memory back
    return rate


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--cases", default="tabular,cifar")
    parser.add_argument("--check", action="store_true",
                        help="the same steps on the CPU with small data, 3 training steps of batch 32, one run: checks the "
                             "script and the JSON it reads (the test suite runs it)")
    args = parser.parse_args()
    device = "cpu" if args.check else "cuda"
    if args.check:
        args.runs, args.steps = 1, 3
        print(f"# --check on the CPU, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}")
        copy = None
    else:
        print(f"# {torch.cuda.get_device_name(0)}, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}")
        copy = d2d_gbps()
        print(f"device-to-device copy: {copy:.0f} GB/s (torch, 1 GiB, median of 5)")
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases.split(","):
            x, y = os.path.join(tmp, case + "_x.npy"), os.path.join(tmp, case + "_y.npy")
            rng = np.random.default_rng(0)
            if case == "tabular":
                n = 4_096 if args.check else 200_000
                np.save(x, rng.standard_normal((n, 256), dtype=np.float32))
                sets = ["model.name=mlp", "model.hidden=[512, 512]", "train.batch_size=1024"]
            else:
                n = 1_024 if args.check else 50_000
                np.save(x, rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8))
                sets = ["model.name=resnet18", "train.batch_size=256", "train.precision=bf16-mixed", "train.channels_last=true",
                        "data.crop_padding=4", "data.hflip=true", "data.mean=[0.49, 0.48, 0.45]", "data.std=[0.25, 0.24, 0.26]"]
            np.save(y, (np.arange(n) % 10).astype(np.int64))
            # --check: fp32, as a CPU without AVX-512 BF16 emulates bf16 convolutions at a crawl.
            sets = [s for s in sets if not s.startswith("train.precision")] + ["train.batch_size=8"] if args.check else sets
            data = ["--source", "npy", "--path", x, "--labels", y, "--set", f"device={device}",
                    *[a for s in sets for a in ("--set", s)]]
            sweep = gputrain(["--json", "--set", "data.cache=none", *data])
            loader = max((r for r in sweep["results"] if r["cache"] == "none"), key=lambda r: r["samples_per_second"])
            loader_sets = ["--set", "data.cache=none", "--set", f"data.num_workers={loader['workers']}", "--set",
                           f"data.prefetch={loader['prefetch']}", "--set", f"data.pin_memory={str(loader['pin_memory']).lower()}"]
            figures = {"vram": [], "loader": []}
            for _ in range(args.runs):
                figures["vram"].append(gputrain(["--step", "--json", "--steps", str(args.steps), "--set", "data.cache=vram", *data]))
                figures["loader"].append(gputrain(["--step", "--json", "--steps", str(args.steps), *loader_sets, *data]))
            print(f"\n## {case}: {n} samples; best loader: {loader['workers']} threads, prefetch {loader['prefetch']}, "
                  f"pin {loader['pin_memory']}")
            print("| feed | epoch s | samples/s | data stall %, host clock | data stall %, GPU clock |")
            print("| --- | --- | --- | --- | --- |")
            rate = {}
            for name, runs in figures.items():
                rate[name] = statistics.median(r["samples_per_second"] for r in runs)
                stall = statistics.median(r["data_stall_percent"] for r in runs)
                gpu_stalls = [r["gpu_data_stall_percent"] for r in runs]  # null without a GPU
                gpu_stall = f"{statistics.median(gpu_stalls):.2f}" if None not in gpu_stalls else "-"
                print(f"| {name} | {n / rate[name]:.2f} | {rate[name]:,.0f} | {stall:.2f} | {gpu_stall} |")
            print(f"| cache / loader | **{rate['vram'] / rate['loader']:.2f}x** | | | |")
            # Each run's rate, to tell a difference between the feeds from one between processes
            # (cuDNN's autotuning picks per process).
            by_run = {name: ", ".join(f"{r['samples_per_second']:.0f}" for r in runs) for name, runs in figures.items()}
            print("<!-- samples/s by run: " + "; ".join(f"{name} {rates}" for name, rates in by_run.items()) + " -->")
            # The caches' gather as training makes it: the training batch, several batches per gather.
            cached = gputrain(["--json", "--workers", "0", *data])
            gather = [r for r in cached["results"] if r["cache"] == "vram"]
            if gather:
                alone, rows = gather[0]["gather_gbps"], gather[0]["gather_rows"]
                share = f" = {100 * alone / copy:.0f} % of device-to-device copy (goal >= 50 %)" if copy else ""
                peer = index_select_gbps(x, y, rows, device)
                print(f"gather on the {'GPU' if copy else 'CPU'} ({rows} samples a gather, as the feed gathers them): "
                      f"{alone:.0f} GB/s{share}; PyTorch eager index_select of the same samples {peer:.0f} GB/s "
                      f"(gputrain / PyTorch {alone / peer:.2f}x); the whole feed (sampler and epoch restarts too) "
                      f"{gather[0]['megabytes_per_second'] / 1000:.0f} GB/s")
            elif args.check:
                sys.exit("no vram result in `gputrain profile --workers 0`'s JSON")

if __name__ == "__main__":
    main()
