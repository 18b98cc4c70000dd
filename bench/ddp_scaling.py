#!/usr/bin/env python3
"""Data-parallel scaling on the CPU: gputrain's DDP over MPI vs PyTorch DDP over Gloo, one run.

The model is configs/mlp.yaml's MLP (256 -> 512 -> 256 -> 10, layer norm, dropout 0.1, SGD with
Nesterov momentum) at 256 samples per rank. Each side trains with 1 rank and with 2 ranks, one
core per rank (gputrain: `--nproc-per-node N`, mpirun binds each rank to a core; PyTorch: one
intra-op thread per process, pinned with os.sched_setaffinity). Throughput is global samples/s
over the steady-state steps; each configuration runs --runs times and the figure is the median.
Scaling efficiency = samples/s(2 ranks) / (2 x samples/s(1 rank)); the issue's goal is >= 0.85.
gputrain also reports which share of its all-reduce time was hidden behind backward.

Usage: bench/ddp_scaling.py [--runs 3] [--steps 300]
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


def gputrain_run(ranks, steps, workdir):
    run_dir = os.path.join(workdir, f"gputrain-{ranks}")
    command = [GPUTRAIN, "train", os.path.join(ROOT, "configs", "mlp.yaml"), "--set", "device=cpu",
               "--set", f"logging.dir={run_dir}", "--set", "checkpoint.resume=never", "--set", "logging.progress=off",
               "--set", "logging.every_steps=20", "--set", "logging.tensorboard=false", "--set", "checkpoint.every_epochs=0",
               "--set", "checkpoint.best_metric=none", "--set", "data.val_samples=0", "--set", "train.epochs=100",
               "--set", f"train.max_steps={steps}", "--set", f"train.batch_size={BATCH}", "--set", f"data.samples={BATCH * ranks * 32}",
               "--nproc-per-node", str(ranks)]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", CUDA_VISIBLE_DEVICES="")
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as workdir:
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
    print(json.dumps({"results": results, "efficiency": {"gputrain": eff_g, "pytorch": eff_t}}))


if __name__ == "__main__":
    main()
