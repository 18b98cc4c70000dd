#!/usr/bin/env python3
"""Sharded optimizer state (distributed.shard_optimizer, ZeRO stage 1) on 2 CPU ranks.

  GPUTRAIN_BUILD=build python3 bench/sharded_optimizer.py [--runs 3] [--steps 50]

configs/transformer.yaml (AdamW, clipping) on the CPU, three ways, interleaved run after run:
  1 rank (pinned to one core), 2 ranks unsharded, 2 ranks sharded (`--nproc-per-node 2`, one core each).
Figures (issue 50):
  optimizer memory per rank, sharded / unsharded: report.json's ranks[].optimizer_state_bytes,
    the larger rank's (goal <= 0.55);
  the loss after --steps steps, sharded vs unsharded: metrics.jsonl's last step record (goal: equal
    within fp32 rounding);
  scaling efficiency of the sharded run: samples/s(2 ranks) / (2 x samples/s(1 rank)), medians of the
    runs (goal >= 0.85), beside the unsharded run's and report.json's own wait-based figure.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRONT = os.path.join(os.environ.get("GPUTRAIN_BUILD", os.path.join(ROOT, "build")), "bin", "gputrain")
CONFIG = os.path.join(ROOT, "configs", "transformer.yaml")


def train(workdir, name, ranks, shard, steps, batch):
    run_dir = os.path.join(workdir, name)
    shutil.rmtree(run_dir, ignore_errors=True)
    sets = ["device=cpu", f"logging.dir={run_dir}", "checkpoint.resume=never", "logging.progress=off", "logging.every_steps=1",
            "logging.tensorboard=false", "checkpoint.every_epochs=0", "checkpoint.best_metric=none", "data.val_samples=0",
            f"train.max_steps={steps}", "train.epochs=100", f"train.batch_size={batch}",
            f"distributed.shard_optimizer={str(shard).lower()}"]
    command = [FRONT, "train", CONFIG] + sum((["--set", s] for s in sets), [])
    command = ["taskset", "-c", "0"] + command if ranks == 1 else command + ["--nproc-per-node", str(ranks)]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", CUDA_VISIBLE_DEVICES="")
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"gputrain failed ({' '.join(command)}):\n{done.stderr[-3000:]}")
    with open(os.path.join(run_dir, "report.json")) as f:
        report = json.load(f)
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        steps_seen = [json.loads(line) for line in f if '"kind":"step"' in line.replace(" ", "")]
    return {
        "samples_per_second": report["samples_per_second"],
        "state_bytes": [r.get("optimizer_state_bytes", 0) for r in report.get("ranks", [])],
        "share_seconds": [r.get("parameter_share_seconds", 0) for r in report.get("ranks", [])],
        "reported_efficiency": report.get("scaling_efficiency"),
        "last_loss": steps_seen[-1]["loss"],
        "last_step": steps_seen[-1]["step"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch", type=int, default=64, help="per rank (the 1-rank run takes the same)")
    args = parser.parse_args()
    runs = {"one": [], "plain": [], "sharded": []}
    with tempfile.TemporaryDirectory() as workdir:
        for _ in range(args.runs):
            runs["one"].append(train(workdir, "one", 1, False, args.steps, args.batch))
            runs["plain"].append(train(workdir, "plain", 2, False, args.steps, args.batch))
            runs["sharded"].append(train(workdir, "sharded", 2, True, args.steps, args.batch))
    rate = {k: statistics.median(r["samples_per_second"] for r in v) for k, v in runs.items()}
    plain, sharded = runs["plain"][-1], runs["sharded"][-1]
    memory_ratio = max(sharded["state_bytes"]) / max(plain["state_bytes"])
    efficiency = {k: rate[k] / (2 * rate["one"]) for k in ("plain", "sharded")}
    losses_equal = all(p["last_loss"] == s["last_loss"] for p, s in zip(runs["plain"], runs["sharded"]))
    print(f"{datetime.date.today()}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"configs/transformer.yaml on the CPU, batch {args.batch} per rank, {args.steps} steps, medians of {args.runs} runs")
    print(f"optimizer state per rank: unsharded {plain['state_bytes']} B, sharded {sharded['state_bytes']} B: "
          f"{memory_ratio:.3f} of unsharded (goal <= 0.55)")
    print(f"loss at step {plain['last_step']}: unsharded {plain['last_loss']!r}, sharded {sharded['last_loss']!r} "
          f"({'equal in every run' if losses_equal else 'DIFFERENT'})")
    spread = {k: (min(r["samples_per_second"] for r in v), max(r["samples_per_second"] for r in v)) for k, v in runs.items()}
    for k in ("one", "plain", "sharded"):
        print(f"  {k:>8}: {rate[k]:8.0f} samples/s (runs {spread[k][0]:.0f}..{spread[k][1]:.0f})")
    print(f"scaling efficiency 1 -> 2 ranks: unsharded {efficiency['plain']:.3f}, sharded {efficiency['sharded']:.3f} (goal >= 0.85); "
          f"report.json's own (1 - waits / step time), sharded: {sharded['reported_efficiency']:.3f}; "
          f"parameter broadcasts per rank {['%.3f s' % s for s in sharded['share_seconds']]}")
    print(json.dumps({"runs": runs, "rates": rate, "memory_ratio": memory_ratio, "efficiency": efficiency, "losses_equal": losses_equal}))


if __name__ == "__main__":
    main()
