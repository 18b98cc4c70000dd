#!/usr/bin/env python3
"""docs/examples/predict.py on image models: given only a run's model.safetensors and its
validation folder, it reproduces the run's validation loss and accuracy, because it makes the same
samples of the files (Pillow's decode, resize and crop: docs/data.md, "Images") and rebuilds the
same network (small_cnn, resnet18 with the CIFAR stem).

Usage: check_predict_images.py WORKDIR -- GPUTRAIN train
"""
import csv
import json
import os
import shutil
import subprocess
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PREDICT = os.path.join(ROOT, "docs", "examples", "predict.py")
CLASSES = ["circle", "square", "stripes"]


def picture(kind, rng, height, width):
    """A noisy picture of its class, of its own size: larger and smaller than the samples, not square."""
    ys, xs = np.mgrid[0:height, 0:width] / np.array([height, width])[:, None, None]
    if kind == "circle":
        shape = ((ys - 0.5) ** 2 + (xs - 0.5) ** 2) < 0.1
    elif kind == "square":
        shape = (abs(ys - 0.5) < 0.3) & (abs(xs - 0.5) < 0.3)
    else:
        shape = (xs * 6).astype(int) % 2 == 0
    pixels = np.dstack([shape * 180 + 40, (1 - shape) * 120 + 60, ys * 200]) + rng.normal(0, 25, (height, width, 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def write_folder(root, count, rng, formats):
    for kind in CLASSES:
        os.makedirs(os.path.join(root, kind), exist_ok=True)
        for i in range(count):
            fmt = formats[i % len(formats)]
            picture(kind, rng, int(rng.integers(14, 70)), int(rng.integers(14, 70))).save(os.path.join(root, kind, f"{i}.{fmt}"))


def main():
    workdir, command = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    shutil.rmtree(workdir, ignore_errors=True)
    rng = np.random.default_rng(4)
    write_folder(os.path.join(workdir, "train"), 40, rng, ["png", "jpg"])
    write_folder(os.path.join(workdir, "val"), 12, rng, ["png"])  # PNG: byte for byte what Pillow makes
    for model, settings in [("small_cnn", ["model.width=8"]), ("resnet18", ["model.stem=cifar", "optimizer.name=adamw", "optimizer.lr=0.001"])]:
        run_dir = os.path.join(workdir, model)
        sets = ["device=cpu", "data.source=image_folder", f"data.path={workdir}/train", f"data.val_path={workdir}/val",
                "data.image_size=[20, 16]", "data.standardize=true", f"model.name={model}", "train.epochs=2", "train.batch_size=20",
                "optimizer.lr=0.01", "logging.progress=off", f"logging.dir={run_dir}"] + settings
        trained = subprocess.run(command + [a for s in sets for a in ("--set", s)], capture_output=True, text=True)
        if trained.returncode != 0:
            fail(f"{model}: training exited {trained.returncode}:\n{trained.stderr}")
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            epoch = [json.loads(line) for line in f if '"kind":"epoch"' in line][-1]
        predicted = subprocess.run([sys.executable, PREDICT, os.path.join(run_dir, "model.safetensors"), f"{workdir}/val"],
                                   capture_output=True, text=True)
        if predicted.returncode != 0:
            fail(f"{model}: predict.py exited {predicted.returncode}:\n{predicted.stderr}")
        table = list(csv.reader(predicted.stdout.splitlines()))
        if table[0] != ["file", "class"] + [f"p({c})" for c in CLASSES] or len(table) != 1 + 12 * len(CLASSES):
            fail(f"{model}: predict.py's table starts {table[:2]} and has {len(table)} rows")
        truths = [CLASSES.index(os.path.basename(os.path.dirname(row[0]))) for row in table[1:]]
        probabilities = np.array([[float(p) for p in row[2:]] for row in table[1:]])
        loss = -np.mean(np.log(probabilities[np.arange(len(truths)), truths]))
        accuracy = np.mean([row[1] == CLASSES[t] for row, t in zip(table[1:], truths)])
        if abs(loss - epoch["val_loss"]) > 1e-4 * max(epoch["val_loss"], 1e-3) or abs(accuracy - epoch["val_accuracy"]) > 1e-9:
            fail(f"{model}: predict.py gives loss {loss}, accuracy {accuracy}; the run's {epoch['val_loss']}, {epoch['val_accuracy']}")
        print(f"{model}: predict.py's loss {loss:.6f} and accuracy {accuracy:.4f} are the run's own validation figures")


if __name__ == "__main__":
    main()
