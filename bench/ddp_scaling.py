#!/usr/bin/env python3
"""Data-parallel scaling on the CPU: gputrain's DDP over MPI vs PyTorch DDP over Gloo, one run.

The model is configs/mlp.yaml's MLP (256 -> 512 -> 256 -> 10, layer norm, dropout 0.1, SGD with
Nesterov momentum) at 256 samples per rank. Each side trains with 1 rank and with 2 ranks, one
core per rank (gputrain: `--nproc-per-node N`, mpirun binds each rank to a core; PyTorch: one
intra-op thread per process, pinned with os.sched_setaffinity). Throughput is global samples/s
over the steady-state steps; each configuration runs --runs times and the figure is the median.
Scaling efficiency = samples/s(2 ranks) / (2 x samples/s(1 rank)); the issue's goal is >= 0.85.
gputrain also reports which share of its all-reduce time was hidden behind backward.

With --gpu (the GPU machine): the overhead of the DDP path at world size 1 against a plain run,
same config (ResNet-18, CIFAR shapes, bf16-mixed, batch 256): `gputrain train` once plain and
once with torchrun's variables for a world of one (NCCL, buckets, hooks, step agreements); goal
< 3 % slower. Both capture their steps in CUDA graphs (train.cuda_graphs: auto; the DDP run's
all-reduces inside the graph); a third side runs the DDP path with graphs off, what distributed
runs were before their all-reduces were captured.

Usage: bench/ddp_scaling.py [--runs 3] [--steps 300] [--gpu]
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPUTRAIN = os.path.join(ROOT, os.environ.get("GPUTRAIN_BUILD", "build"), "bin", "gputrain")
BATCH = 256


def gputrain_run(ranks, steps, workdir, world_of_one=False):
    """ranks 0: one process pinned to one core, plain or (world_of_one) through the DDP path with
    torchrun's variables for a world of one (MPI singleton), to measure the path's own cost."""
    run_dir = os.path.join(workdir, f"gputrain-{ranks}-{world_of_one}")
    command = [GPUTRAIN, "train", os.path.join(ROOT, "configs", "mlp.yaml"), "--set", "device=cpu",
               "--set", f"logging.dir={run_dir}", "--set", "checkpoint.resume=never", "--set", "logging.progress=off",
               "--set", "logging.every_steps=20", "--set", "logging.tensorboard=false", "--set", "checkpoint.every_epochs=0",
               "--set", "checkpoint.best_metric=none", "--set", "data.val_samples=0", "--set", "train.epochs=100",
               "--set", f"train.max_steps={steps}", "--set", f"train.batch_size={BATCH}",
               "--set", f"data.samples={BATCH * max(ranks, 1) * 32}"]
    command = ["taskset", "-c", "0"] + command if ranks == 0 else command + ["--nproc-per-node", str(ranks)]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", CUDA_VISIBLE_DEVICES="")
    if world_of_one:
        env.update(RANK="0", WORLD_SIZE="1")
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"gputrain failed:\n{done.stderr[-3000:]}")
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        rates = [json.loads(l)["samples_per_second"] for l in f if '"kind":"step"' in l.replace(" ", "")]
    hidden = re.search(r"(\d+)% hidden behind backward", done.stderr)
    return statistics.median(rates[1:]), (int(hidden.group(1)) if hidden else None)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        layers, width = [], 256
        for hidden in (512, 256):
            layers += [nn.Linear(width, hidden), nn.LayerNorm(hidden), nn.ReLU(), nn.Dropout(0.1)]
            width = hidden
        layers.append(nn.Linear(width, 10))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def torch_rank(rank, ranks, steps, port, out):
    os.sched_setaffinity(0, {rank % os.cpu_count()})
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=ranks)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Mlp())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    x, y = torch.randn(BATCH * 32, 256), torch.randint(0, 10, (BATCH * 32,))
    warmup = 20
    for step in range(steps + warmup):
        if step == warmup:
            start = time.perf_counter()
        i = (step % 32) * BATCH
        loss = nn.functional.cross_entropy(model(x[i:i + BATCH]), y[i:i + BATCH])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    seconds = time.perf_counter() - start
    if rank == 0:
        out.put(ranks * BATCH * steps / seconds)
    dist.destroy_process_group()


def torch_run(ranks, steps):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    queue = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(torch_rank, args=(ranks, steps, port, queue), nprocs=ranks, start_method="spawn")
    return queue.get()


def gpu_overhead(runs, steps):
    import socket
    plain, ddp, ddp_eager = [], [], []
    with tempfile.TemporaryDirectory() as workdir:
        for i in range(runs):
            for world, graphs, rates in ((False, "auto", plain), (True, "auto", ddp), (True, "off", ddp_eager)):
                run_dir = os.path.join(workdir, f"{'ddp' if world else 'plain'}-{graphs}-{i}")
                env = dict(os.environ)
                if world:
                    with socket.socket() as s:
                        s.bind(("127.0.0.1", 0))
                        port = s.getsockname()[1]
                    env.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                               MASTER_PORT=str(port))
                command = [GPUTRAIN, "train", os.path.join(ROOT, "configs", "resnet18-cifar.yaml"), "--set", "device=cuda",
                           "--set", "train.precision=bf16-mixed", "--set", "train.channels_last=true", "--set", "train.batch_size=256",
                           "--set", f"train.max_steps={steps}", "--set", "train.epochs=1000", "--set", "data.source=synthetic",
                           "--set", "data.samples=25600", "--set", "data.val_samples=0", "--set", "checkpoint.best_metric=none",
                           "--set", "checkpoint.every_epochs=0", "--set", "logging.every_steps=20", "--set", "logging.progress=off",
                           "--set", "logging.tensorboard=false", "--set", f"logging.dir={run_dir}",
                           "--set", f"train.cuda_graphs={graphs}"]
                done = subprocess.run(command, capture_output=True, text=True, env=env)
                if done.returncode != 0:
                    sys.exit(f"gputrain failed:\n{done.stderr[-3000:]}")
                with open(os.path.join(run_dir, "metrics.jsonl")) as f:
                    window = [json.loads(l)["samples_per_second"] for l in f if '"kind":"step"' in l.replace(" ", "")]
                rates.append(statistics.median(window[1:]))
    p, d, e = statistics.median(plain), statistics.median(ddp), statistics.median(ddp_eager)
    # Each DDP run ran right after its plain twin: the pairs' ratios cancel the machine's drift
    # between pairs, which on a shared host is as large as the overhead being measured.
    paired = statistics.median(100 * (1 - b / a) for a, b in zip(plain, ddp))
    print(f"GPU: {torch.cuda.get_device_name(0)}; ResNet-18 bf16-mixed batch 256, {steps} steps, median of {runs} runs")
    print(f"plain {p:.0f} samples/s, DDP path at world size 1 (NCCL) {d:.0f} samples/s: overhead {100 * (1 - d / p):.2f} % "
          f"(ratio of medians), {paired:.2f} % (median of the {runs} back-to-back pairs); goal < 3 %")
    print(f"DDP path with its all-reduces in the step's CUDA graph {d:.0f} vs eager (train.cuda_graphs: off) {e:.0f} samples/s: "
          f"{d / e:.2f}x (spread {min(ddp):.0f}-{max(ddp):.0f} vs {min(ddp_eager):.0f}-{max(ddp_eager):.0f})")
    print(json.dumps({"plain": plain, "ddp_world1": ddp, "ddp_world1_eager": ddp_eager, "overhead_percent": 100 * (1 - d / p),
                      "paired_overhead_percent": paired, "graphs_vs_eager": d / e}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--gpu", action="store_true", help="the DDP path's overhead at world size 1 on a GPU instead")
    args = parser.parse_args()
    if args.gpu:
        return gpu_overhead(args.runs, args.steps)
    results = {}
    with tempfile.TemporaryDirectory() as workdir:
        plain, single = [], []
        for _ in range(args.runs):
            plain.append(gputrain_run(0, args.steps, workdir)[0])
            single.append(gputrain_run(0, args.steps, workdir, world_of_one=True)[0])
        plain, single = statistics.median(plain), statistics.median(single)
        for ranks in (1, 2):
            g, hidden, t = [], [], []
            for _ in range(args.runs):
                rate, share = gputrain_run(ranks, args.steps, workdir)
                g.append(rate)
                hidden.append(share)
                t.append(torch_run(ranks, args.steps))
            results[ranks] = {"gputrain": statistics.median(g), "pytorch": statistics.median(t),
                              "gputrain_runs": g, "pytorch_runs": t, "hidden_percent": hidden}
    eff_g = results[2]["gputrain"] / (2 * results[1]["gputrain"])
    eff_t = results[2]["pytorch"] / (2 * results[1]["pytorch"])
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; torch {torch.__version__}")
    print(f"{'ranks':>5} {'gputrain (MPI) samples/s':>26} {'PyTorch DDP (Gloo) samples/s':>30} {'ratio':>6}")
    for ranks in (1, 2):
        r = results[ranks]
        print(f"{ranks:>5} {r['gputrain']:>26.0f} {r['pytorch']:>30.0f} {r['gputrain'] / r['pytorch']:>6.2f}")
    print(f"scaling efficiency 1 -> 2 ranks: gputrain {eff_g:.3f}, PyTorch DDP {eff_t:.3f} (goal >= 0.85)")
    print(f"gputrain all-reduce time hidden behind backward (2 ranks, per run): {results[2]['hidden_percent']} %")
    overhead = 100 * (1 - single / plain)
    print(f"gputrain DDP path at world size 1 (MPI) {single:.0f} vs plain {plain:.0f} samples/s, one core each: "
          f"{overhead:.1f} % overhead")
    print(json.dumps({"results": results, "plain_one_core": plain, "ddp_world1_one_core": single, "ddp_world1_overhead_percent": overhead,
                      "efficiency": {"gputrain": eff_g, "pytorch": eff_t}}))


if __name__ == "__main__":
    main()
