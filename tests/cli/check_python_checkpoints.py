#!/usr/bin/env python3
"""gputrain's checkpoints are files Python's torch.load(path, weights_only=True) opens (#50).

Usage: check_python_checkpoints.py WORKDIR -- GPUTRAIN_TRAIN_COMMAND...

gputrain trains an MLP on a CSV for 4 full-batch steps, with a checkpoint after each, once with
SGD (Nesterov momentum, weight decay) and once with AdamW over two parameter groups. Python then:
  - opens step-2.pt with weights_only=True and finds the documented keys (docs/checkpoints.md);
  - loads its `model` into the same torch.nn.Sequential and its `optimizer` into torch.optim.SGD or
    AdamW, built over the parameters its param_groups name;
  - takes step 3 itself: the loss before it is gputrain's step-3 loss (metrics.jsonl), the weights
    after it are step-3.pt's, and the loss after it is gputrain's step-4 loss, all within fp32
    rounding. So the optimizer state carried over exactly;
  - saves its step 3 with torch.save in step-3.pt's layout, and gputrain resumes from that file to
    the uninterrupted run's step-4 weights.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail, fresh_workdir_and_command  # noqa: E402

ROWS, FEATURES, HIDDEN, CLASSES = 64, 8, 16, 3
KEYS = {"format", "format_version", "model", "optimizer", "scaler", "scheduler", "progress", "config"}


def write_csv(path):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(ROWS, FEATURES)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 1).astype(np.int64)
    with open(path, "w") as f:
        f.write(",".join(f"f{i}" for i in range(FEATURES)) + ",label\n")
        for row, label in zip(x, y):
            f.write(",".join(repr(float(v)) for v in row) + f",{label}\n")


def read_csv(path):
    rows = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64)
    return torch.tensor(rows[:, :FEATURES], dtype=torch.float32), torch.tensor(rows[:, FEATURES], dtype=torch.int64)


def train(command, workdir, run, *settings):
    args = command + ["--set", "device=cpu", "--set", "data.path=train.csv", "--set", "data.labels=label",
                      "--set", "model.name=mlp", "--set", f"model.hidden=[{HIDDEN}]", "--set", f"train.batch_size={ROWS}",
                      "--set", "train.epochs=4", "--set", "checkpoint.every_steps=1", "--set", "checkpoint.keep_last=10",
                      "--set", "logging.every_steps=1", "--set", "logging.progress=lines", "--set", "logging.tensorboard=false",
                      "--set", "checkpoint.resume=never", "--set", f"logging.dir={run}", *settings]
    result = subprocess.run(args, capture_output=True, text=True, cwd=workdir)
    if result.returncode != 0:
        fail(f"{' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    with open(os.path.join(workdir, run, "metrics.jsonl")) as f:
        steps = [json.loads(line) for line in f if '"kind":"step"' in line]
    return os.path.join(workdir, run, "checkpoints"), {s["step"]: s["loss"] for s in steps}


def close(a, b, what):
    if not torch.allclose(a, b, rtol=1e-5, atol=1e-6):
        fail(f"{what}: Python {a.flatten()[:4].tolist()}..., gputrain {b.flatten()[:4].tolist()}... (max diff {(a - b).abs().max():.3g})")


def step_in_python(folder, losses, make_optimizer, x, y, label):
    saved = torch.load(os.path.join(folder, "step-00000002.pt"), weights_only=True)
    if set(saved) != KEYS:
        fail(f"{label}: step-2.pt has keys {sorted(saved)}, expected {sorted(KEYS)}")
    if saved["format"] != "gputrain checkpoint" or saved["format_version"] != 3 or saved["progress"]["step"] != 2:
        fail(f"{label}: format/progress {saved['format']!r} {saved['format_version']} step {saved['progress']['step']}")
    if "model:" not in saved["config"] or not isinstance(saved["progress"]["rng"]["cpu"], torch.Tensor):
        fail(f"{label}: no config text or CPU RNG state in step-2.pt")
    model = nn.Sequential(nn.Flatten(), nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES))
    model.load_state_dict(saved["model"])
    named = dict(model.named_parameters())
    groups = [{"params": [named[n] for n in g["param_names"]]} for g in saved["optimizer"]["param_groups"]]
    optimizer = make_optimizer(groups)
    optimizer.load_state_dict(saved["optimizer"])
    loss = nn.functional.cross_entropy(model(x), y)
    if abs(loss.item() - losses[3]) > 1e-5 * max(1, abs(losses[3])):
        fail(f"{label}: loss before step 3 is {loss.item()} in Python, {losses[3]} in gputrain")
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    after = torch.load(os.path.join(folder, "step-00000003.pt"), weights_only=True)["model"]
    for name, tensor in model.state_dict().items():
        close(tensor, after[name], f"{label}: {name} after step 3")
    with torch.no_grad():
        next_loss = nn.functional.cross_entropy(model(x), y).item()
    if abs(next_loss - losses[4]) > 1e-5 * max(1, abs(losses[4])):
        fail(f"{label}: loss after step 3 is {next_loss} in Python, {losses[4]} in gputrain (step 4's)")
    print(f"ok: {label}: Python's step 3 from step-2.pt matches gputrain's (loss {losses[3]:.6f} -> {next_loss:.6f})")
    return model, optimizer


def resume_from_python(command, workdir, folder, label, model, optimizer, settings):
    """Python saves its step 3 as a checkpoint; gputrain resumes it and its step 4 is the run's own."""
    edited = torch.load(os.path.join(folder, "step-00000003.pt"), weights_only=True)
    edited["model"], edited["optimizer"] = model.state_dict(), optimizer.state_dict()
    path = os.path.join(workdir, label.split(",")[0] + "-python-step-3.pt")
    torch.save(edited, path)
    again, losses = train(command, workdir, "runs/" + label.split(",")[0] + "-from-python", *settings,
                          "--set", f"checkpoint.resume={path}")
    ours = torch.load(os.path.join(again, "step-00000004.pt"), weights_only=True)["model"]
    theirs = torch.load(os.path.join(folder, "step-00000004.pt"), weights_only=True)["model"]
    for name in theirs:
        close(ours[name], theirs[name], f"{label}: {name} at step 4, resumed from Python's torch.save")
    print(f"ok: {label}: gputrain resumes a checkpoint Python saved, and its step 4 is the uninterrupted run's")


def main():
    workdir, command = fresh_workdir_and_command("usage: check_python_checkpoints.py WORKDIR -- GPUTRAIN_TRAIN_COMMAND...")
    write_csv(os.path.join(workdir, "train.csv"))
    x, y = read_csv(os.path.join(workdir, "train.csv"))
    sgd = ["--set", "optimizer.name=sgd", "--set", "optimizer.lr=0.1", "--set", "optimizer.momentum=0.9",
           "--set", "optimizer.nesterov=true", "--set", "optimizer.weight_decay=0.001"]
    folder, losses = train(command, workdir, "runs/sgd", *sgd)
    stepped = step_in_python(folder, losses, lambda g: torch.optim.SGD(g, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.001),
                             x, y, "SGD")
    resume_from_python(command, workdir, folder, "SGD", *stepped, sgd)
    adamw = ["--set", "optimizer.name=adamw", "--set", "optimizer.lr=0.01",
             "--set", "optimizer.param_groups=[{params: ['3'], lr: 0.03}, {params: default, lr: 0.01}]"]
    folder, losses = train(command, workdir, "runs/adamw", *adamw)
    stepped = step_in_python(folder, losses, lambda g: torch.optim.AdamW(g, lr=0.01), x, y, "AdamW, two groups")
    resume_from_python(command, workdir, folder, "AdamW, two groups", *stepped, adamw)

if __name__ == "__main__":
    main()
