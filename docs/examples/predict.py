#!/usr/bin/env python3
"""Predictions of a model gputrain trained, from Python, with nothing but its model.safetensors.

Usage:
  python3 predict.py runs/x/model.safetensors new.csv  > predictions.csv   (or new.csv.gz)
  python3 predict.py runs/x/model.safetensors x.npy    > predictions.csv

The weights file says what it needs (its metadata): the model's settings (model.hidden, ...), the
CSV feature columns in the order the model reads them (data.features; "Sex=male" is a one-hot column
of data.categories' column 'Sex': 1 where its cell is "male"), the class names, and the
standardisation figures (data.mean/data.std for the inputs, data.target_mean/data.target_std
for regression outputs; data.labels, the target columns), and with data.missing mean or zero the
value a missing cell of each column takes (data.fill_values). A CSV may hold other columns (the label, an id): only the features are
read. Prints one row per sample: the class (its name when the labels were names) and each class's
probability (softmax of the outputs; columns "p(name)"), or the predicted values in the targets'
units. A model trained with train.class_weights gives the weighted classes higher probabilities
than their share of the data: move the threshold on a "p(...)" column, not the weights, to trade
recall for precision after training.

Built-in MLPs only (model.name mlp): the script rebuilds the same torch.nn.Sequential gputrain
builds, so the state_dict keys ("1.weight", ...) match. Needs torch, safetensors and numpy.
"""
import csv
import gzip
import json
import sys

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file


def mlp(meta, state):
    """torch.nn.Sequential as gputrain's MLP builds it (src/train/models/mlp.cpp)."""
    hidden = json.loads(meta["model.hidden"])
    activations = {"relu": torch.nn.ReLU, "gelu": torch.nn.GELU, "silu": torch.nn.SiLU, "tanh": torch.nn.Tanh}
    width = int(np.prod(json.loads(meta["data.shape"])))
    layers = [torch.nn.Flatten()]
    for size in hidden:
        layers.append(torch.nn.Linear(width, size))
        if meta["model.norm"] == "batch":
            layers.append(torch.nn.BatchNorm1d(size))
        elif meta["model.norm"] == "layer":
            layers.append(torch.nn.LayerNorm(size))
        layers.append(activations[meta["model.activation"]]())
        if float(meta["model.dropout"]) > 0:
            layers.append(torch.nn.Dropout(float(meta["model.dropout"])))
        width = size
    outputs = state[f"{len(layers)}.weight"].shape[0]
    layers.append(torch.nn.Linear(width, outputs))
    model = torch.nn.Sequential(*layers)
    model.load_state_dict(state)  # strict: every key and shape must match
    return model.eval()


def read_inputs(path, meta):
    if path.endswith(".npy"):
        return np.load(path).astype(np.float32)
    features = json.loads(meta.get("data.features", "[]"))
    categories = json.loads(meta.get("data.categories", "{}"))
    if not features:
        sys.exit(f"{path}: this model was not trained on a CSV, so it has no column names; give its inputs as .npy")
    opener = gzip.open if path.endswith(".gz") else open  # data.csv.gz, as pandas writes it
    with opener(path, "rt", newline="", encoding="utf-8-sig") as f:
        sample = f.read(4096)
        f.seek(0)
        dialect = csv.Sniffer().sniff(sample, delimiters=",;\t")
        rows = csv.reader(f, dialect)
        header = next(rows)
        fill = json.loads(meta.get("data.fill_values", "{}"))
        readers = [input_reader(name, header, categories, fill.get(name)) for name in features]
        missing = sorted({reader for reader in readers if isinstance(reader, str)})
        if missing:
            sys.exit(f"{path} lacks the feature columns {missing}; the model reads {features}")
        return np.array([[read(row) for read in readers] for row in rows if row], dtype=np.float32)


def input_reader(name, header, categories, fill):
    """How one input is read from a row: a column's number (`fill` where the cell is missing), or
    1/0 for a category's one-hot column ("Sex=male": 1 where the cell is "male"; a missing cell, or
    a category the training data lacked, is 0 in each). The name of the column the file lacks, when
    it lacks it."""
    column, _, value = name.partition("=")
    if column in categories and value in categories[column]:
        if column not in header:
            return column
        c = header.index(column)
        return lambda row: 1.0 if row[c].strip() == value else 0.0
    if name not in header:
        return name
    c = header.index(name)
    return lambda row: number(row[c], name, fill)


# pandas.read_csv's marks of a missing value, as gputrain reads them.
MISSING = {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL",
           "NaN", "None", "n/a", "nan", "null"}


def number(cell, name, fill):
    """A cell as gputrain reads it: a number, or a bool as pandas, R or JSON write it; a missing
    value as data.missing filled it in training."""
    true_false = {"True": 1.0, "TRUE": 1.0, "true": 1.0, "False": 0.0, "FALSE": 0.0, "false": 0.0}
    if cell.strip() in MISSING:
        if fill is None:
            sys.exit(f"column '{name}' misses a value, and the model was trained without data.missing mean or zero: fill it in")
        return float(fill)
    return true_false[cell] if cell in true_false else float(cell)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    weights, inputs_path = sys.argv[1], sys.argv[2]
    with safe_open(weights, framework="pt") as f:
        meta = f.metadata()
    if meta.get("model") != "mlp":
        sys.exit(f"{weights} holds a {meta.get('model')!r} model; this example rebuilds MLPs only")
    model = mlp(meta, load_file(weights))
    x = read_inputs(inputs_path, meta)
    if "data.mean" in meta:
        x = (x - np.array(json.loads(meta["data.mean"]), dtype=np.float32)) / np.array(json.loads(meta["data.std"]), dtype=np.float32)
    with torch.no_grad():
        out = model(torch.from_numpy(x)).numpy()
    writer = csv.writer(sys.stdout)
    if meta["data.task"] == "classification":
        names = json.loads(meta.get("data.class_names", "[]")) or list(range(out.shape[1]))
        probabilities = torch.softmax(torch.from_numpy(out).double(), dim=1).numpy()
        writer.writerow(["class"] + [f"p({name})" for name in names])
        for k, row in zip(out.argmax(axis=1), probabilities):
            writer.writerow([names[k]] + [f"{p:.6g}" for p in row])
    else:
        if "data.target_mean" in meta:
            out = out * np.array(json.loads(meta["data.target_std"])) + np.array(json.loads(meta["data.target_mean"]))
        labels = json.loads(meta.get("data.labels", "[]"))  # the CSV's target columns
        writer.writerow(labels if len(labels) == out.shape[1] else [f"prediction_{i}" for i in range(out.shape[1])])
        for row in out:
            writer.writerow([repr(float(v)) for v in row])


if __name__ == "__main__":
    main()
