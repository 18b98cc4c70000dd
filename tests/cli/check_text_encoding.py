#!/usr/bin/env python3
"""Text that is not UTF-8 trains to the end and keeps its weights (#52).

Usage: check_text_encoding.py WORKDIR -- GPUTRAIN_TRAIN_COMMAND...

A CSV exported by Excel on Windows (Windows-1252: a header 'café', a category and class names
'réd'), an image class folder named on a Latin-1 system, and a Latin-1 byte in logging.dir each
once trained and then died on nlohmann's type_error.316, exit 1, with no model.safetensors. Each
must exit 0 with model.safetensors, say once, before the first step, how the text was read, and
write metadata and metrics.jsonl that Python reads as UTF-8, names decoded as Windows-1252.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
from PIL import Image
from safetensors import safe_open

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail, fresh_workdir_and_command  # noqa: E402


def train(command, workdir, config_text, run_dir):
    config = os.path.join(workdir, "config.yaml")
    with open(config, "wb") as f:
        f.write(config_text)
    print("+ " + " ".join(command + [config]), flush=True)
    result = subprocess.run(command + [config, "--set", "device=cpu", "--set", "logging.progress=lines"],
                            capture_output=True, cwd=workdir)
    err = result.stderr.decode("utf-8", "replace")
    if result.returncode != 0 or "Traceback" in err or "type_error" in err:
        fail(f"exit {result.returncode}:\n{err}")
    weights = os.path.join(workdir, os.fsdecode(run_dir), "model.safetensors")
    if not os.path.exists(weights):
        fail(f"no model.safetensors in {run_dir!r}:\n{err}")
    with open(os.path.join(workdir, os.fsdecode(run_dir), "metrics.jsonl"), encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    if not records:
        fail("metrics.jsonl is empty")
    return err, weights


def said_once_before_training(err, text):
    lines = err.splitlines()
    said = [n for n, line in enumerate(lines) if text in line]
    steps = [n for n, line in enumerate(lines) if line.startswith("step ")]
    if len(said) != 1 or not steps or said[0] > steps[0]:
        fail(f"'{text}' should be said once, before the first step:\n{err}")


def metadata_of(weights):
    readable = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(weights))), "read.safetensors")
    shutil.copy(weights, readable)  # safetensors opens UTF-8 paths only
    with safe_open(readable, "pt") as f:
        return f.metadata()


def check_csv(workdir, command):
    rows = ["a,café,colour,label"] + [f"{i / 64},{(i * 7 % 64) / 64},{'réd' if i % 3 else 'blue'},{'réd' if i % 2 else 'blue'}"
                                      for i in range(64)]
    with open(os.path.join(workdir, "excel.csv"), "wb") as f:
        f.write("\r\n".join(rows).encode("cp1252") + b"\r\n")
    config = (b"model:\n  name: mlp\ndata:\n  path: excel.csv\n  labels: label\n  categorical: [colour]\n"
              b"train:\n  epochs: 1\n  batch_size: 16\nlogging:\n  dir: runs/csv\n")
    err, weights = train(command, workdir, config, "runs/csv")
    said_once_before_training(err, "'excel.csv' (line 1: byte 0xE9, read as 'é') is not UTF-8: read as Windows-1252")
    meta = metadata_of(weights)
    if json.loads(meta["data.class_names"]) != ["blue", "réd"]:
        fail("class names: " + meta["data.class_names"])
    if json.loads(meta["data.features"]) != ["a", "café", "colour=blue", "colour=réd"]:
        fail("features: " + meta["data.features"])
    print("a Windows-1252 CSV trains; its names read as written")


def check_image_folder(workdir, command):
    rng = np.random.default_rng(0)
    for folder in (b"caf\xe9", b"tea"):  # a Latin-1 folder name
        path = os.path.join(os.fsencode(workdir), b"images", folder)
        os.makedirs(path)
        for i in range(4):
            Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(os.path.join(path, b"%d.png" % i))
    config = (b"model:\n  name: small_cnn\ndata:\n  source: image_folder\n  path: images\n  val_path: images\n"
              b"  image_size: [8, 8]\ntrain:\n  epochs: 1\n  batch_size: 4\nlogging:\n  dir: runs/images\n")
    err, weights = train(command, workdir, config, "runs/images")
    said_once_before_training(err, "class folder 'café' is not named in UTF-8")
    if json.loads(metadata_of(weights)["data.class_names"]) != ["café", "tea"]:
        fail("class names: " + metadata_of(weights)["data.class_names"])
    print("a Latin-1 class folder trains, validates on the same folders, and is named 'café'")


def check_run_dir(workdir, command):
    shutil.copy(os.path.join(workdir, "excel.csv"), os.path.join(workdir, "plain.csv"))
    config = (b"model:\n  name: mlp\ndata:\n  path: plain.csv\n  labels: label\n  categorical: [colour]\n"
              b"train:\n  epochs: 1\nlogging:\n  dir: runs/r\xe9sum\xe9\n")
    err, weights = train(command, workdir, config, b"runs/r\xe9sum\xe9")
    said_once_before_training(err, "note: the config's 'dir: runs/résumé' is not UTF-8")
    if "dir: runs/résumé" not in metadata_of(weights)["config"]:
        fail("the config in the metadata: " + metadata_of(weights)["config"])
    print("a Latin-1 logging.dir holds the run; the metadata reads it as Windows-1252")


def main():
    workdir, command = fresh_workdir_and_command(__doc__)
    check_csv(workdir, command)
    check_image_folder(workdir, command)
    check_run_dir(workdir, command)


if __name__ == "__main__":
    main()
