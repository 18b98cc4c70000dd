#!/usr/bin/env python3
"""Predictions of a model gputrain trained, from Python, with nothing but its model.safetensors.

Usage:
  python3 predict.py runs/x/model.safetensors new.csv  > predictions.csv   (or new.csv.gz)
  python3 predict.py runs/x/model.safetensors x.npy    > predictions.csv
  python3 predict.py runs/x/model.safetensors photos/  > predictions.csv   (or one .jpg/.png)

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

Images (a model trained on an image folder or on images in PostgreSQL): each JPEG or PNG file, in a
folder searched recursively, becomes the sample gputrain makes of it (data.image_size,
data.preprocess: Pillow's decode, the antialiased bilinear resize to cover, centre crop;
docs/data.md), and the rows start with the file's path.

Built-in models: mlp, small_cnn and the ResNets. The script rebuilds the same torch.nn modules
gputrain builds, so the state_dict keys ("1.weight", "layer1.0.conv1.weight", ...) match. Needs
torch, safetensors and numpy, and Pillow for images.
"""
import csv
import gzip
import json
import os
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


def small_cnn(meta, state):
    """torch.nn.Sequential as gputrain's small_cnn builds it (src/train/models/small_cnn.cpp)."""
    nn = torch.nn
    width, channels = int(meta["model.width"]), json.loads(meta["data.shape"])[0]
    layers = []
    for out in (width, 2 * width, 4 * width):
        layers += [nn.Conv2d(channels, out, 3, padding=1, bias=False), nn.BatchNorm2d(out), nn.ReLU(inplace=True)]
        if out != 4 * width:
            layers.append(nn.MaxPool2d(2))
        channels = out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
    if float(meta["model.dropout"]) > 0:
        layers.append(nn.Dropout(float(meta["model.dropout"])))
    layers.append(nn.Linear(channels, state[f"{len(layers)}.weight"].shape[0]))
    model = nn.Sequential(*layers)
    model.load_state_dict(state)
    return model.eval()


class Block(torch.nn.Module):
    """A ResNet block as torchvision lays it out (src/train/models/resnet.cpp): basic or bottleneck."""

    def __init__(self, cin, planes, stride, bottleneck):
        super().__init__()
        nn, out = torch.nn, planes * (4 if bottleneck else 1)
        shapes = [(cin, planes, 1, 1), (planes, planes, 3, stride), (planes, out, 1, 1)] if bottleneck else \
                 [(cin, planes, 3, stride), (planes, planes, 3, 1)]
        for i, (a, b, k, s) in enumerate(shapes, 1):
            setattr(self, f"conv{i}", nn.Conv2d(a, b, k, stride=s, padding=k // 2, bias=False))
            setattr(self, f"bn{i}", nn.BatchNorm2d(b))
        self.count = len(shapes)
        self.downsample = nn.Sequential(nn.Conv2d(cin, out, 1, stride=stride, bias=False), nn.BatchNorm2d(out)) \
            if stride != 1 or cin != out else None

    def forward(self, x):
        y = x
        for i in range(1, self.count + 1):
            y = getattr(self, f"bn{i}")(getattr(self, f"conv{i}")(y))
            if i < self.count:
                y = torch.relu(y)
        return torch.relu(y + (self.downsample(x) if self.downsample is not None else x))


class ResNet(torch.nn.Module):
    def __init__(self, meta, depth, outputs):
        super().__init__()
        nn = torch.nn
        blocks, bottleneck = {18: ([2, 2, 2, 2], False), 34: ([3, 4, 6, 3], False), 50: ([3, 4, 6, 3], True)}[depth]
        channels, imagenet = json.loads(meta["data.shape"])[0], meta["model.stem"] == "imagenet"
        self.conv1 = nn.Conv2d(channels, 64, 7 if imagenet else 3, stride=2 if imagenet else 1, padding=3 if imagenet else 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1) if imagenet else None
        cin = 64
        for stage, count in enumerate(blocks):
            layer = []
            for b in range(count):
                layer.append(Block(cin, 64 << stage, 2 if stage > 0 and b == 0 else 1, bottleneck))
                cin = (64 << stage) * (4 if bottleneck else 1)
            setattr(self, f"layer{stage + 1}", nn.Sequential(*layer))
        self.fc = nn.Linear(cin, outputs)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        if self.maxpool is not None:
            y = self.maxpool(y)
        for stage in range(1, 5):
            y = getattr(self, f"layer{stage}")(y)
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))


def resnet(meta, state, depth):
    model = ResNet(meta, depth, state["fc.weight"].shape[0])
    model.load_state_dict(state)
    return model.eval()


MODELS = {"mlp": mlp, "small_cnn": small_cnn, "resnet18": lambda m, s: resnet(m, s, 18), "resnet34": lambda m, s: resnet(m, s, 34),
          "resnet50": lambda m, s: resnet(m, s, 50)}


PRECISION_BITS = 22  # fixed-point weights, as Pillow's resampling (and gputrain's: src/data/image_resize.cpp)


def resize_weights(size, target):
    """[target, size] fixed-point weights of the antialiased bilinear filter: a triangle whose support
    widens with the downscale, each row normalised to 1 (Pillow's precompute_coeffs)."""
    scale = size / target
    spread = max(scale, 1.0)
    inverse = 1.0 / spread
    weights = np.zeros((target, size), dtype=np.int64)
    for out in range(target):
        center = (out + 0.5) * scale
        first = max(int(center - spread + 0.5), 0)
        taps = [max(0.0, 1.0 - abs((k + first - center + 0.5) * inverse)) for k in range(min(int(center + spread + 0.5), size) - first)]
        total = sum(taps)
        for k, tap in enumerate(taps):
            fixed = (tap / total if total != 0.0 else tap) * (1 << PRECISION_BITS)
            weights[out, first + k] = int(fixed - 0.5) if fixed < 0 else int(fixed + 0.5)
    return weights


def resample(pixels, weights, axis):
    """One pass along `axis` (1: columns, 0: rows) of an int64 HWC image, rounded back to 8 bits."""
    summed = np.moveaxis(np.tensordot(pixels, weights, axes=([axis], [1])), -1, axis)
    return np.clip((summed + (1 << (PRECISION_BITS - 1))) >> PRECISION_BITS, 0, 255)


def image_sample(path, height, width):
    """A JPEG or PNG file as gputrain makes a sample of it (docs/data.md, "Images"): uint8 [3, height, width]."""
    from PIL import Image
    with Image.open(path) as img:
        if img.format == "JPEG":
            img.draft("RGB", (width, height))  # decoded at 1/2, 1/4 or 1/8 scale while that still covers the target
        pixels = np.asarray(img.convert("RGB")).astype(np.int64)
    h, w = pixels.shape[:2]
    if width * h >= height * w:  # the size that covers the target, rounded half up
        rows, columns = (2 * h * width + w) // (2 * w), width
    else:
        rows, columns = height, (2 * w * height + h) // (2 * h)
    if columns != w:  # columns first, then rows
        pixels = resample(pixels, resize_weights(w, columns), 1)
    if rows != h:
        pixels = resample(pixels, resize_weights(h, rows), 0)
    top, left = (rows - height) // 2, (columns - width) // 2
    crop = pixels[top:top + height, left:left + width].astype(np.uint8)
    return np.ascontiguousarray(crop.transpose(2, 0, 1))


def image_files(path):
    """One image, or a folder's JPEG and PNG files (searched recursively, dot-folders left out) in sorted order."""
    if os.path.isfile(path):
        return [path]
    found = []
    for root, folders, files in os.walk(path):
        folders[:] = [f for f in folders if not f.startswith(".")]
        found += [os.path.join(root, f) for f in files if f.lower().endswith((".jpg", ".jpeg", ".png")) and not f.startswith(".")]
    return sorted(found)


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


def model_inputs(path, meta):
    """The model's input batch, as gputrain's transform makes it (src/data/batch_transform.cpp), and
    the image files it came from (empty for a CSV or an array)."""
    files = []
    if "data.image_size" in meta and not path.endswith(".npy"):
        height, width = json.loads(meta["data.image_size"])
        files = image_files(path)
        if not files:
            sys.exit(f"{path} holds no .jpg, .jpeg or .png file")
        x = torch.from_numpy(np.stack([image_sample(f, height, width) for f in files]))
    else:
        x = torch.from_numpy(read_inputs(path, meta))
    x = x.float().mul_(1.0 / 255.0) if x.dtype == torch.uint8 else x.float()
    if "data.mean" in meta:
        shape = (1, -1) + (1,) * (x.dim() - 2)  # per feature, or per channel of an image
        x = (x - torch.tensor(json.loads(meta["data.mean"]), dtype=torch.float32).view(shape)) / \
            torch.tensor(json.loads(meta["data.std"]), dtype=torch.float32).view(shape)
    return x, files


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    weights, inputs_path = sys.argv[1], sys.argv[2]
    with safe_open(weights, framework="pt") as f:
        meta = f.metadata()
    if meta.get("model") not in MODELS:
        sys.exit(f"{weights} holds a {meta.get('model')!r} model; this example rebuilds {', '.join(MODELS)} only")
    model = MODELS[meta["model"]](meta, load_file(weights))
    x, files = model_inputs(inputs_path, meta)
    with torch.no_grad():
        out = model(x).numpy()
    writer = csv.writer(sys.stdout)
    first = (lambda i: [files[i]]) if files else (lambda i: [])
    if meta["data.task"] == "classification":
        names = json.loads(meta.get("data.class_names", "[]")) or list(range(out.shape[1]))
        probabilities = torch.softmax(torch.from_numpy(out).double(), dim=1).numpy()
        writer.writerow((["file"] if files else []) + ["class"] + [f"p({name})" for name in names])
        for i, (k, row) in enumerate(zip(out.argmax(axis=1), probabilities)):
            writer.writerow(first(i) + [names[k]] + [f"{p:.6g}" for p in row])
    else:
        if "data.target_mean" in meta:
            out = out * np.array(json.loads(meta["data.target_std"])) + np.array(json.loads(meta["data.target_mean"]))
        labels = json.loads(meta.get("data.labels", "[]"))  # the CSV's target columns
        writer.writerow((["file"] if files else []) + (labels if len(labels) == out.shape[1] else
                                                        [f"prediction_{i}" for i in range(out.shape[1])]))
        for i, row in enumerate(out):
            writer.writerow(first(i) + [repr(float(v)) for v in row])


if __name__ == "__main__":
    main()
