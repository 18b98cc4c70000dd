#!/usr/bin/env python3
"""What watching a run costs the step: samples/s with the monitoring on against all of it off.

  GPUTRAIN_BUILD=build python3 bench/monitoring_overhead.py [--runs 7] [--device cpu|cuda] [--epochs N] [--no-mlflow] [--parts]

configs/mlp.yaml (the CPU benchmark's MLP), its training steps only (no validation, checkpoints
or TensorBoard), the two sides interleaved run after run:
  on:  logging.grad_norm, logging.system_every 1s (ten times the default's readings), the alerts
       at their defaults, and logging.mlflow to a real `mlflow server` on 127.0.0.1 (started here
       with tests/mlflow/mlflow_server.py; its venv is made on first use);
  on without MLflow: the same but MLflow, to tell its share;
  off: logging.grad_norm false, logging.system_every off, the step lines' alerts off;
  with --parts, two more: off but the gradient norm, and off but the system readings.
samples/s is report.json's (the training steps alone); the figure is the ratio of the medians,
with each side's spread, after one untimed run of each side; each round runs the sides in a new
(seeded) order, so that a side is not always the one after another. Goal (issue 51): on >= 0.99x off.
A run trains 10 epochs on the CPU and 150 on a GPU (about 2 s there: the MLP steps 5,000 times a
second, and a run of 0.1 s would weigh each side's one-time costs, not its steps).
"""
import argparse
import datetime
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "mlflow"))
import mlflow_server  # noqa: E402
FRONT = os.path.join(os.environ.get("GPUTRAIN_BUILD", os.path.join(ROOT, "build")), "bin", "gputrain")
SIDES = {
    "on": ["logging.grad_norm=true", "logging.system_every=1s"],
    "on without MLflow": ["logging.grad_norm=true", "logging.system_every=1s"],
    "off": ["logging.grad_norm=false", "logging.system_every=off", "logging.alerts.grad_norm=off", "logging.alerts.data_wait_ms=off",
            "logging.alerts.no_improvement_epochs=off"],
}
OFF_BUT = {"off but the gradient norm": "logging.grad_norm=true", "off but the system readings": "logging.system_every=1s"}


def group_cpu_seconds(pgid):
    """CPU time of every process in a process group (the MLflow server's), from /proc."""
    ticks = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # pgrp; utime and stime follow at 11 and 12
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def samples_per_second(device, epochs, side, workdir, extra):
    run_dir = os.path.join(workdir, side)
    shutil.rmtree(run_dir, ignore_errors=True)
    sets = [f"device={device}", f"train.epochs={epochs}", "data.val_samples=0", "checkpoint.best_metric=none",
            "checkpoint.every_epochs=0", "logging.progress=off", "logging.tensorboard=false", f"logging.dir={run_dir}"]
    sets += SIDES[side] if side in SIDES else SIDES["off"] + [OFF_BUT[side]]
    sets += extra if side == "on" else []
    args = [FRONT, "train", os.path.join(ROOT, "configs", "mlp.yaml")] + sum((["--set", s] for s in sets), [])
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {result.returncode}:\n{result.stderr}")
    with open(os.path.join(run_dir, "report.json")) as f:
        return json.load(f)["samples_per_second"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=None, help="of configs/mlp.yaml's 64 steps each (default: 10 on the CPU, 150 on a GPU)")
    parser.add_argument("--no-mlflow", action="store_true", help="leave MLflow out of the `on` side")
    parser.add_argument("--parts", action="store_true", help="also time the gradient norm and the system readings each alone")
    args = parser.parse_args()
    if args.epochs is None:
        args.epochs = 10 if args.device == "cpu" else 150
    sides = [side for side in SIDES if not (args.no_mlflow and side == "on without MLflow")] + (list(OFF_BUT) if args.parts else [])
    rates = {side: [] for side in sides}
    server_cpu = []
    with tempfile.TemporaryDirectory(prefix="gputrain-monitoring-") as workdir:
        server, extra = None, []
        if not args.no_mlflow:
            _, why = mlflow_server.ensure_venv()
            if why:
                raise SystemExit(f"{why}\n(--no-mlflow measures the rest)")
            server = mlflow_server.Server(os.path.join(workdir, "mlflow")).start()
            extra = [f"logging.mlflow.tracking_uri={server.uri}", "logging.mlflow.experiment=monitoring-overhead"]
        try:
            # One untimed run of each side first: the server's first requests load its code, which
            # on a small machine takes the cores from the training beside it.
            for side in sides:
                samples_per_second(args.device, args.epochs, side, workdir, extra)
            order = random.Random(51)
            for _ in range(args.runs):  # interleaved, in a new order each round: drift hits every side alike
                for side in order.sample(sides, len(sides)):
                    before = group_cpu_seconds(server.process.pid) if server else 0
                    rates[side].append(samples_per_second(args.device, args.epochs, side, workdir, extra))
                    if server and side == "on":
                        server_cpu.append(group_cpu_seconds(server.process.pid) - before)
        finally:
            if server:
                server.stop()
    median = {side: statistics.median(values) for side, values in rates.items()}
    print(f"# monitoring on vs off{'' if args.no_mlflow else ' (MLflow included)'}, configs/mlp.yaml on {args.device}, {args.epochs * 64} steps, "
          f"medians of {args.runs} runs, {datetime.date.today()}\n")
    print("| side | samples/s | runs' spread |\n| --- | ---: | ---: |")
    for side, values in rates.items():
        print(f"| {side} | {median[side]:.0f} | {min(values):.0f}-{max(values):.0f} |")
    print("\nruns in order: " + "; ".join(f"{side} " + ", ".join(f"{v:.0f}" for v in values) for side, values in rates.items()))
    ratio = median["on"] / median["off"]
    print(f"\non / off: {ratio:.3f}x; goal >= 0.99x: {'met' if ratio >= 0.99 else 'not met'}")
    for side in OFF_BUT:
        if side in median:
            print(f"{side} / off: {median[side] / median['off']:.3f}x")
    if extra:
        paired = statistics.median(a / b for a, b in zip(rates["on"], rates["on without MLflow"]))
        print(f"MLflow alone (on / on without MLflow): {median['on'] / median['on without MLflow']:.3f}x; "
              f"median of the rounds' ratios {paired:.3f}x")
        print(f"the server's own CPU time in an `on` run (it shares this machine's cores): "
              f"median {statistics.median(server_cpu):.2f} s, {min(server_cpu):.2f}-{max(server_cpu):.2f} s")


if __name__ == "__main__":
    main()
