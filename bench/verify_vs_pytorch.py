#!/usr/bin/env python3
"""gputrain verify's performance figures vs the same operations timed through PyTorch, in one run.

  .venv/bin/python bench/verify_vs_pytorch.py [--build build] [--runs 3]     (needs a GPU)

For each figure (matmul fp32/tf32/bf16/fp16 at 8192^3, device copy 512 MiB, host<->device 256 MiB
pinned and pageable) it takes the median over --runs of `gputrain verify --json --level quick`
and of PyTorch eager doing the identical operation with the identical timing method (CUDA events,
median of timed repeats after a warm-up). Goal: gputrain within 5 % of PyTorch.
Prints a Markdown table for docs/benchmarks.md.
"""
import argparse
import datetime
import json
import statistics
import subprocess

import torch

N = 8192


def median_ms(body, repeats):
    stream = torch.cuda.current_stream()
    body()
    stream.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        body()
        end.record(stream)
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def matmul_tflops(dtype, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.randn(N, N, device="cuda", dtype=dtype)
    b = torch.randn(N, N, device="cuda", dtype=dtype)
    c = torch.empty(N, N, device="cuda", dtype=dtype)
    per_run = 20 if dtype in (torch.bfloat16, torch.float16) else 5

    def body():
        for _ in range(per_run):
            torch.mm(a, b, out=c)

    ms = median_ms(body, 3) / per_run
    torch.backends.cuda.matmul.allow_tf32 = False
    return 2 * N**3 / (ms * 1e-3) / 1e12


def device_copy_gbps():
    size = 512 << 20
    src = torch.full((size,), 7, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return 2 * size / (median_ms(lambda: dst.copy_(src), 5) * 1e-3) / 1e9


def host_copy_gbps(to_device, pinned):
    size = 256 << 20
    host = torch.full((size,), 3, dtype=torch.uint8).pin_memory() if pinned else torch.full((size,), 3, dtype=torch.uint8)
    dev = torch.empty(size, dtype=torch.uint8, device="cuda")
    body = (lambda: dev.copy_(host, non_blocking=pinned)) if to_device else (lambda: host.copy_(dev, non_blocking=pinned))
    return size / (median_ms(body, 5) * 1e-3) / 1e9


PEERS = {
    "matmul_fp32": lambda: matmul_tflops(torch.float32, False),
    "matmul_tf32": lambda: matmul_tflops(torch.float32, True),
    "matmul_bf16": lambda: matmul_tflops(torch.bfloat16, False),
    "matmul_fp16": lambda: matmul_tflops(torch.float16, False),
    "d2d_bandwidth": device_copy_gbps,
    "h2d_pinned": lambda: host_copy_gbps(True, True),
    "d2h_pinned": lambda: host_copy_gbps(False, True),
    "h2d_pageable": lambda: host_copy_gbps(True, False),
    "d2h_pageable": lambda: host_copy_gbps(False, False),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no GPU: this benchmark runs on the GPU machine (scripts/device-run.sh)")

    ours = {name: [] for name in PEERS}
    units = {}
    for _ in range(args.runs):
        run = subprocess.run([f"{args.build}/bin/gputrain", "verify", "--json", "--level", "quick"],
                             capture_output=True, text=True)
        for check in json.loads(run.stdout)["checks"]:
            name = check["id"].removeprefix("performance.0.")
            if name in ours and check["figures"]:
                ours[name].append(check["figures"][0]["value"])
                units[name] = check["figures"][0]["unit"]
    peer = {name: [fn() for _ in range(args.runs)] for name, fn in PEERS.items()}

    print(f"GPU: {torch.cuda.get_device_name(0)}; torch {torch.__version__}; {datetime.date.today().isoformat()}; "
          f"median of {args.runs} runs each\n")
    print("| figure | unit | gputrain verify | PyTorch eager | gputrain / PyTorch |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name in PEERS:
        if not ours[name]:
            print(f"| {name} | | skipped | {statistics.median(peer[name]):.1f} | |")
            continue
        a, b = statistics.median(ours[name]), statistics.median(peer[name])
        print(f"| {name} | {units[name]} | {a:.1f} | {b:.1f} | {a / b:.3f} |")


if __name__ == "__main__":
    main()
