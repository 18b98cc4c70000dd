#!/usr/bin/env python3
"""End-to-end checks of `gputrain train` that need Python's reference readers or signals.

Usage: check_train.py MODE WORKDIR -- GPUTRAIN_TRAIN_COMMAND...
Modes:
  sigterm      SIGTERM mid-run -> exit 130 and a checkpoint; the same command resumes and finishes.
  hangup       a closed terminal or ssh session: the console goes (its pipe's reader closes) and
               SIGHUP comes -> exit 130 and a checkpoint, not a run killed by SIGHUP or SIGPIPE.
  scheduler-signal  SIGUSR1 and SIGUSR2, which schedulers send ahead of a time limit (SLURM's
               --signal), stop the run as SIGTERM does: exit 130 and a checkpoint, not a kill.
  readback     model.safetensors read by `safetensors`, events read by TensorBoard's own reader,
               and init weights written by Python are what C++ starts from.
  torchscript  a module scripted in Python trains, and its weights keep PyTorch's names.
  cpu-cache    the CPU block cache holds freed activations (reserved > allocated in the step
               records), and GPUTRAIN_CPU_CACHE=0 turns it off (reserved == allocated).
  predict      docs/examples/predict.py, given a run's model.safetensors and its validation CSV,
               reproduces the run's own val accuracy (class names, standardised features, layer
               norm, gelu) and val MAE (two standardised targets, a bool column, ';' cells, .csv.gz).
  plateau      scheduler: plateau lowers the learning rate where PyTorch's ReduceLROnPlateau, given
               the run's own validation figures, does: the same rate for every epoch, in both modes,
               down to min_lr.
  evaluate     --evaluate on a run's config.yaml: best.pt gives the figures its epoch had;
               model.safetensors on a test file (data.val_path, the run having held
               data.val_fraction out, standardised) gives what predict.py's probabilities give;
               --json is the only stdout; a missing weights file is exit 2.
  diverge      a loss that turns nan stops the run (exit 1, "training diverged", the fix) before
               it writes a checkpoint of broken weights; with fp16's GradScaler too.
"""
import json
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail, require, run, step_lines  # noqa: E402
from train_predict_checks import check_evaluate, check_predict  # noqa: E402
from train_signal_checks import check_hangup, check_scheduler_signal, check_sigterm  # noqa: E402
from train_torchscript_checks import check_torchscript  # noqa: E402


def mlp_like_gputrain(features, hidden, outputs):
    # The same layer order as gputrain's mlp (Flatten, Linear, ReLU, ..., Linear): same names.
    layers = [torch.nn.Flatten()]
    width = features
    for h in hidden:
        layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
        width = h
    layers.append(torch.nn.Linear(width, outputs))
    return torch.nn.Sequential(*layers)


def check_readback(workdir, command):
    require("safetensors", "tensorboard")
    from safetensors.torch import load_file, save_file
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    torch.manual_seed(0)
    init = {k: v.contiguous() for k, v in mlp_like_gputrain(12, [16], 3).state_dict().items()}
    init_path = os.path.join(workdir, "init.safetensors")
    save_file(init, init_path)
    run_dir = os.path.join(workdir, "run")
    # lr 0: the weights must come back exactly as Python wrote them.
    result = run(command + ["--set", "model.name=mlp", "--set", "model.hidden=[16]", "--set", "data.shape=[12]",
                            "--set", "data.classes=3", "--set", "data.samples=64", "--set", "data.val_samples=16",
                            "--set", "train.batch_size=8", "--set", "train.epochs=2", "--set", "optimizer.lr=0",
                            "--set", "model.init_weights=" + init_path, "--set", "logging.every_steps=2",
                            "--set", "logging.dir=" + run_dir, "--set", "device=cpu"])
    print(result.stderr[-1500:])
    if result.returncode != 0:
        fail("train exited %d" % result.returncode)
    weights = load_file(os.path.join(run_dir, "model.safetensors"))
    if sorted(weights) != sorted(init):
        fail("names differ: %s vs %s" % (sorted(weights), sorted(init)))
    for name, tensor in init.items():
        if not torch.equal(weights[name], tensor):
            fail("tensor %s differs from the Python-written initial weights" % name)
    events = EventAccumulator(run_dir)
    events.Reload()
    scalars = events.Tags()["scalars"]
    for tag in ("train/loss", "train/lr", "val/loss", "val/accuracy"):
        if tag not in scalars:
            fail("TensorBoard sees no %s (it sees %s)" % (tag, scalars))
    losses = [(e.step, e.value) for e in events.Scalars("train/loss")]
    expected = [(line["step"], line["loss"]) for line in step_lines(os.path.join(run_dir, "metrics.jsonl"))]
    if [s for s, _ in losses] != [s for s, _ in expected]:
        fail("TensorBoard steps %s differ from metrics.jsonl steps %s" % (losses, expected))
    for (_, a), (_, b) in zip(losses, expected):
        if abs(a - b) > 1e-6 * max(1.0, abs(b)):
            fail("TensorBoard loss %r differs from metrics.jsonl %r" % (a, b))
    print("ok: %d tensors read back by safetensors, %d loss points read by TensorBoard" % (len(weights), len(losses)))


def check_cpu_cache(workdir, command):
    def reserved_minus_allocated(name, env):
        run_dir = os.path.join(workdir, name)
        args = command + ["--set", "logging.dir=" + run_dir, "--set", "logging.every_steps=1", "--set", "train.max_steps=6",
                          "--set", "checkpoint.resume=never", "--set", "device=cpu"]
        result = run(args, env=dict(os.environ, **env))
        if result.returncode != 0:
            fail("train exited %d:\n%s" % (result.returncode, result.stderr))
        steps = step_lines(os.path.join(run_dir, "metrics.jsonl"))
        if len(steps) != 6:
            fail("%s: expected 6 step records, found %d" % (name, len(steps)))
        return [s["memory_reserved"] - s["memory_allocated"] for s in steps]

    cached = reserved_minus_allocated("cache-on", {})
    if max(cached) <= 0:
        fail("with the cache on, no step reported cached bytes (reserved - allocated: %s)" % cached)
    off = reserved_minus_allocated("cache-off", {"GPUTRAIN_CPU_CACHE": "0"})
    if any(d != 0 for d in off):
        fail("GPUTRAIN_CPU_CACHE=0 still cached bytes (reserved - allocated: %s)" % off)
    print("ok: cached after each step %s; none with GPUTRAIN_CPU_CACHE=0" % cached)


def check_diverge(workdir, command):
    for precision in ("fp32", "fp16-mixed"):
        run_dir = os.path.join(workdir, precision)
        # lr 1e6 blows the weights up within a few steps; a checkpoint every 2 steps and a report
        # every 3 put checkpoints both before and after the first nan.
        result = run(command + ["--set", "logging.dir=" + run_dir, "--set", "optimizer.lr=1e6", "--set", "train.precision=" + precision,
                                "--set", "checkpoint.every_steps=2", "--set", "logging.every_steps=3", "--set", "checkpoint.resume=never",
                                "--set", "device=cpu"])
        print(result.stderr[-800:])
        if result.returncode != 1:
            fail("%s: expected exit 1 for a diverged run, got %d" % (precision, result.returncode))
        if "training diverged: the loss is" not in result.stderr or "fix: lower optimizer.lr" not in result.stderr:
            fail("%s: stderr does not say the training diverged and how to fix it" % precision)
        folder = os.path.join(run_dir, "checkpoints")
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            # Checkpoints are dicts torch.load opens (docs/checkpoints.md): the weights under "model".
            state = torch.load(os.path.join(folder, name), weights_only=True)["model"]
            floats = [t for t in state.values() if t.is_floating_point()]
            if not floats:
                fail("%s: checkpoint %s holds no model tensors: %s" % (precision, name, list(state)[:5]))
            if not all(torch.isfinite(t).all() for t in floats):
                fail("%s: checkpoint %s holds nan/inf values" % (precision, name))
        print("ok: %s stops with exit 1; every checkpoint written is finite" % precision)


def check_plateau(workdir, command):
    # Two runs whose validation figure stalls often, both watched in max mode: val_loss with
    # best_mode max (it mostly falls, so most epochs are "not better"), and val_accuracy.
    cases = {"loss-max": ["--set", "checkpoint.best_metric=val_loss", "--set", "checkpoint.best_mode=max", "--set", "scheduler.patience=1",
                          "--set", "scheduler.gamma=0.5", "--set", "scheduler.min_lr=0.002", "--set", "optimizer.lr=0.01"],
             "accuracy": ["--set", "checkpoint.best_metric=val_accuracy", "--set", "scheduler.patience=0", "--set", "scheduler.gamma=0.3",
                          "--set", "optimizer.lr=0.05"]}
    for name, settings in cases.items():
        run_dir = os.path.join(workdir, name)
        result = run(command + ["--set", "logging.dir=" + run_dir, "--set", "scheduler.name=plateau", "--set", "train.epochs=8",
                                "--set", "data.samples=512", "--set", "data.val_samples=256", "--set", "train.batch_size=64",
                                "--set", "logging.every_steps=1", "--set", "logging.progress=lines", "--set", "device=cpu"] + settings)
        if result.returncode != 0:
            fail(f"{name}: training exited {result.returncode}:\n{result.stdout}{result.stderr}")
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            records = [json.loads(line) for line in f]
        epochs = [r for r in records if r["kind"] == "epoch"]
        steps = [r for r in records if r["kind"] == "step"]
        per_epoch = len(steps) // len(epochs)
        metric = settings[1].split("=")[1]
        config = {s.split("=")[0]: s.split("=")[1] for s in settings[1::2]}
        lr = float(config["optimizer.lr"])
        optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode="max", factor=float(config["scheduler.gamma"]), patience=int(config["scheduler.patience"]),
            threshold=0, cooldown=0, min_lr=float(config.get("scheduler.min_lr", 0)))
        decays = 0
        for e, epoch in enumerate(epochs[:-1]):
            scheduler.step(epoch[metric])
            expected = optimizer.param_groups[0]["lr"]
            ours = steps[(e + 1) * per_epoch]["lr"]
            if abs(ours - expected) > 1e-12 * expected:
                fail(f"{name}: epoch {e + 2} trains at lr {ours}; ReduceLROnPlateau gives {expected} after {[r[metric] for r in epochs[:e + 1]]}")
            decays += expected < lr
            lr = expected
        if decays == 0:
            fail(f"{name}: no decay in {len(epochs)} epochs; the comparison saw nothing")
        if "learning rate " not in result.stdout + result.stderr:
            fail(f"{name}: the run did not say when it lowered the learning rate:\n{result.stderr}")
        print(f"{name}: every epoch's lr is ReduceLROnPlateau's ({decays} decays, last {lr:g})")


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        fail(__doc__)
    mode, workdir, command = sys.argv[1], sys.argv[2], sys.argv[4:]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    modes = {"sigterm": check_sigterm, "hangup": check_hangup, "scheduler-signal": check_scheduler_signal,
             "readback": check_readback, "torchscript": check_torchscript, "cpu-cache": check_cpu_cache,
             "diverge": check_diverge, "predict": check_predict, "plateau": check_plateau,
             "evaluate": check_evaluate}
    modes[mode](workdir, command)


if __name__ == "__main__":
    main()
