#!/usr/bin/env python3
"""A run whose paths are not UTF-8 (typed on a Latin-1 system: `café` as the byte 0xE9) leaves
files every reader opens, and resumes from them.

Usage: check_latin1_paths.py WORKDIR -- GPUTRAIN_TRAIN_COMMAND...

gputrain trains from WORKDIR/caf\\xe9/{x,y}.npy into WORKDIR/caf\\xe9/run with TensorBoard on. Then:
  - Python's torch.load(weights_only=True) opens its checkpoint, whose config names the data as
    os.fsdecode does ('caf\\udce9'): the path opens in Python as it is;
  - TensorBoard's reader parses the hyper-parameters (a proto3 string must be UTF-8) and shows
    data.path as 'café'; metrics.jsonl and report.json are JSON;
  - the checkpoint saved again by torch.save resumes the run with no config change said.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail, fresh_workdir_and_command  # noqa: E402


def train(command, data, run, epochs):
    args = [os.fsencode(a) for a in command] + [
        b"--set", b"device=cpu", b"--set", b"data.source=npy", b"--set", b"data.path=" + os.path.join(data, b"x.npy"),
        b"--set", b"data.labels=" + os.path.join(data, b"y.npy"), b"--set", b"model.name=mlp", b"--set", b"model.hidden=[8]",
        b"--set", b"train.batch_size=16", b"--set", b"train.epochs=%d" % epochs, b"--set", b"logging.tensorboard=true",
        b"--set", b"logging.progress=lines", b"--set", b"logging.dir=" + run]
    result = subprocess.run(args, capture_output=True)
    out = (result.stdout + result.stderr).decode("utf-8", "replace")
    if result.returncode != 0:
        fail(f"{args} exited {result.returncode}:\n{out}")
    return out


def check_tensorboard(run, workdir):
    # TensorBoard's loader cannot open a path that is not UTF-8 itself: its files are read from a copy.
    copy = os.path.join(workdir, "tensorboard-copy")
    os.makedirs(copy)
    for event_file in glob.glob(os.path.join(os.fsdecode(run), "events.out.tfevents.*")):
        shutil.copy(event_file, copy)
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.plugins.hparams import plugin_data_pb2
    for event_file in glob.glob(os.path.join(copy, "*.extras")):
        events = event_accumulator.EventAccumulator(event_file, size_guidance={"tensors": 0})
        events.Reload()
        start = plugin_data_pb2.HParamsPluginData()
        try:
            start.ParseFromString(events.SummaryMetadata("_hparams_/session_start_info").plugin_data.content)
        except Exception as e:  # noqa: BLE001 -- protobuf's DecodeError, whichever implementation
            fail(f"TensorBoard cannot read the hyper-parameters: {e}")
        path = start.session_start_info.hparams["data.path"].string_value
        if not path.endswith("caf\u00e9/x.npy"):
            fail(f"TensorBoard's data.path is {path!r}, expected .../caf\u00e9/x.npy")
        config = events.Tensors("config")[0].tensor_proto.string_val[0].decode("utf-8")
        if "caf\u00e9/x.npy" not in config:
            fail(f"TensorBoard's config text names no caf\u00e9/x.npy:\n{config}")
        return
    fail(f"no .extras event file in {run}")


def main():
    workdir, command = fresh_workdir_and_command(__doc__)
    data = os.path.join(os.fsencode(os.path.abspath(workdir)), b"caf\xe9")
    run = os.path.join(data, b"run")
    os.makedirs(data)
    rng = np.random.default_rng(3)
    np.save(os.fsdecode(os.path.join(data, b"x.npy")), rng.normal(size=(64, 4)).astype(np.float32))
    np.save(os.fsdecode(os.path.join(data, b"y.npy")), rng.integers(0, 2, size=64))
    said = train(command, data, run, 1)
    if "is not UTF-8: paths are used byte for byte" not in said:
        fail(f"the run did not say that its config is not UTF-8:\n{said}")

    checkpoints = sorted(glob.glob(os.path.join(os.fsdecode(run), "checkpoints", "step-*.pt")))
    if not checkpoints:
        fail(f"no checkpoint in {run}")
    try:
        saved = torch.load(checkpoints[-1], weights_only=True)
    except Exception as e:  # noqa: BLE001 -- the failure itself is the finding
        fail(f"torch.load cannot open {checkpoints[-1]!r}: {repr(e)[:300]}")
    named = os.fsdecode(os.path.join(data, b"x.npy"))
    if named not in saved["config"]:
        fail(f"the checkpoint's config does not name {named!r} (os.fsdecode's form):\n{saved['config']}")

    check_tensorboard(run, workdir)
    with open(os.path.join(os.fsdecode(run), "metrics.jsonl")) as f:
        for line in f:
            json.loads(line)
    with open(os.path.join(os.fsdecode(run), "report.json")) as f:
        if json.load(f)["outcome"] != "finished":
            fail("report.json's outcome is not finished")

    torch.save(saved, checkpoints[-1])  # as a user who edited it in Python would
    out = train(command, data, run, 2)
    if "resumed from" not in out or "data.path " in out or "logging.dir " in out:  # a change is "key old -> new"
        fail(f"the second run did not resume from the checkpoint torch.save wrote, or named its paths as changed:\n{out}")
    print("ok: torch.load, TensorBoard, metrics.jsonl, report.json and a resume read a run whose paths are Latin-1")


if __name__ == "__main__":
    main()
