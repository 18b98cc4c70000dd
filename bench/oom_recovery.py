#!/usr/bin/env python3
"""How long `gputrain train` takes to get over a real out-of-memory error, and what it costs.

  GPUTRAIN_BUILD=build python3 bench/oom_recovery.py [--runs 3] [--device cuda]

One MLP (1024 -> 4096 -> 4096 -> 10, fp32, AdamW) at batch 4096 on 16384 synthetic samples:
  1. a reference run without a cap: its steps, final loss, the median step time and the peak
     memory its steps reached (metrics.jsonl);
  2. --runs runs capped (`--max-memory`) at what stays allocated between steps plus 60 % of what
     a step adds on top of it: the first step runs out of memory
     and the guard splits it into micro-batches. From each run's metrics.jsonl: the OOM events'
     `recovery_seconds` (from catching the OOM until the step's micro-batches had all run, device
     synchronised), the steps and the final loss.
Goal (issue 4): recovery < 2 s on the GPU machine; the same steps as the reference (so the same
samples: every step takes the whole batch) and the same final loss up to rounding.
Prints a Markdown table for docs/benchmarks.md.
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRONT = os.path.join(os.environ.get("GPUTRAIN_BUILD", os.path.join(ROOT, "build")), "bin", "gputrain")
SETS = ["model.name=mlp", "model.hidden=[4096, 4096]", "model.dropout=0", "data.shape=[1024]", "data.samples=16384",
        "data.val_samples=0", "train.batch_size=4096", "train.epochs=1", "train.precision=fp32", "train.tf32=false",
        "optimizer.name=adamw", "checkpoint.best_metric=none", "logging.every_steps=1", "logging.progress=off",
        "logging.tensorboard=false"]


def train(device, sets, cap_bytes=None):
    run_dir = tempfile.mkdtemp(prefix="gputrain-bench-oom-")
    try:
        command = [FRONT, "train", "--set", f"device={device}", "--set", f"logging.dir={run_dir}"]
        for s in sets:
            command += ["--set", s]
        if cap_bytes:
            command += ["--max-memory", f"{cap_bytes // (1 << 20)}MiB"]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0:
            raise SystemExit(f"{' '.join(command)}\nfailed with exit code {run.returncode}:\n{run.stderr}")
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            records = [json.loads(line) for line in f]
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    steps = [r for r in records if r["kind"] == "step"]
    return {"steps": steps[-1]["step"], "loss": steps[-1]["loss"], "peak": max(r["memory_peak"] for r in steps),
            "resident": steps[-1]["memory_allocated"],
            "step_seconds": statistics.median(r["compute_seconds"] + r["data_seconds"] for r in steps[1:] or steps),
            "ooms": [r for r in records if r["kind"] == "oom"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--small", action="store_true", help="a 1024-wide MLP at batch 4096 on 8192 samples: checks the script on a CPU (the test suite runs it)")
    args = parser.parse_args()
    sets = SETS + (["model.hidden=[1024, 1024]", "data.shape=[256]", "train.batch_size=4096", "data.samples=8192"] if args.small else [])
    batch = int(next(s for s in reversed(sets) if s.startswith("train.batch_size=")).split("=")[1])
    reference = train(args.device, sets)
    # What stays between steps (weights, optimizer state, data) plus 60 % of what a step adds on top.
    cap = reference["resident"] + (reference["peak"] - reference["resident"]) * 3 // 5
    capped = [train(args.device, sets, cap) for _ in range(args.runs)]
    recoveries = [e["recovery_seconds"] for run in capped for e in run["ooms"] if e["recovery_seconds"] >= 0]
    if not recoveries:
        raise SystemExit(f"no OOM happened under a cap of {cap >> 20} MiB: nothing to measure")
    where = args.device
    if args.device.startswith("cuda") and shutil.which("nvidia-smi"):
        where = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    print(f"OOM recovery, {where}, {datetime.date.today()}, {args.runs} capped runs\n")
    print("| run | cap | OOM events | micro-batch after | recovery s (median, max) | steps | final loss |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: |")
    print(f"| reference (no cap) | - | 0 | {batch} | - | {reference['steps']} | {reference['loss']:.5f} |")
    for i, run in enumerate(capped, 1):
        times = [e["recovery_seconds"] for e in run["ooms"] if e["recovery_seconds"] >= 0]
        after = run["ooms"][-1]["new_micro_batch"] if run["ooms"] else batch
        spread = f"{statistics.median(times):.3f}, {max(times):.3f}" if times else "-"
        print(f"| capped {i} | {cap >> 20} MiB | {len(run['ooms'])} | {after} | {spread} | {run['steps']} | {run['loss']:.5f} |")
    same_steps = all(run["steps"] == reference["steps"] for run in capped)
    print(f"\nrecovery median {statistics.median(recoveries):.3f} s, max {max(recoveries):.3f} s (goal < 2 s); "
          f"a normal step takes {reference['step_seconds']:.3f} s; same steps as the reference: {'yes' if same_steps else 'NO'}")


if __name__ == "__main__":
    main()
