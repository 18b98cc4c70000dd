#!/usr/bin/env python3
"""Activation checkpointing: the largest batch that fits under a memory cap, and what it costs a step.

  GPUTRAIN_BUILD=build python3 bench/activation_checkpointing.py [--device cuda] [--max-memory 4GiB] [--runs 5]

ResNet-50 (the CIFAR stem, 32x32 samples), bf16-mixed on a GPU and fp32 on a CPU, with
train.activation_checkpointing off and on (every bottleneck block):
  largest batch: `gputrain profile --batch --exhaustive` (bisection on real steps) under the cap;
  step time:     `gputrain train` at the same batch both ways (the largest that fits without it),
                 train.max_steps steps, report.json's samples/s of the training steps, the two
                 sides interleaved run after run; the cost is the ratio of the medians.
Goals (issue 50): largest batch >= 1.7x, step time <= 1.4x.
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
CONFIG = """model: {name: resnet50}
data: {shape: [3, 32, 32], classes: 10, samples: 4096, val_samples: 0}
train: {epochs: 1, batch_size: auto}
checkpoint: {best_metric: none, every_epochs: 0}
logging: {progress: off, tensorboard: false}
"""


def run(args, what):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{what}: {' '.join(args)} exited {result.returncode}:\n{result.stderr}")
    return result.stdout


def settings(args, recompute):
    precision = "bf16-mixed" if args.device.startswith("cuda") else "fp32"
    return [f"device={args.device}", f"train.precision={precision}", f"train.activation_checkpointing={str(recompute).lower()}"]


def largest_batch(args, config, recompute):
    cmd = [FRONT, "profile", "--batch", "--exhaustive", "--json", "--max-memory", args.max_memory, config]
    out = run(cmd + sum((["--set", s] for s in settings(args, recompute)), []), "profile --batch")
    return json.loads(out)["largest_fitting_batch"]


def samples_per_second(args, config, recompute, batch, workdir):
    run_dir = os.path.join(workdir, "on" if recompute else "off")
    shutil.rmtree(run_dir, ignore_errors=True)
    sets = settings(args, recompute) + [f"train.batch_size={batch}", f"train.max_steps={args.steps}", f"logging.dir={run_dir}"]
    run([FRONT, "train", config] + sum((["--set", s] for s in sets), []), "train")
    with open(os.path.join(run_dir, "report.json")) as f:
        return json.load(f)["samples_per_second"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--max-memory", default="1GiB", help="the cap (GPU: 4GiB, the issue's figure)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=8, help="training steps per timed run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gputrain-recompute-") as workdir:
        config = os.path.join(workdir, "resnet50.yaml")
        with open(config, "w") as f:
            f.write(CONFIG)
        largest = {recompute: largest_batch(args, config, recompute) for recompute in (False, True)}
        rates = {False: [], True: []}
        for _ in range(args.runs):  # interleaved, so drift in the machine's state hits both sides alike
            for recompute in (False, True):
                rates[recompute].append(samples_per_second(args, config, recompute, largest[False], workdir))
    median = {k: statistics.median(v) for k, v in rates.items()}
    precision = settings(args, False)[1].split("=")[1]
    print(f"# activation checkpointing, ResNet-50 32x32 {precision} on {args.device} under --max-memory {args.max_memory}, "
          f"{datetime.date.today()}\n")
    print("| activation checkpointing | largest batch | samples/s at batch %d (median of %d) | spread |" % (largest[False], args.runs))
    print("| --- | ---: | ---: | ---: |")
    for recompute in (False, True):
        values = rates[recompute]
        print(f"| {'on' if recompute else 'off'} | {largest[recompute]} | {median[recompute]:,.1f} | "
              f"{min(values):,.1f} to {max(values):,.1f} |")
    print(f"\nlargest batch: {largest[True] / largest[False]:.2f}x (goal >= 1.7x); "
          f"step time: {median[False] / median[True]:.2f}x (goal <= 1.4x)")


if __name__ == "__main__":
    main()
