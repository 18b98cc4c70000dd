#!/usr/bin/env python3
"""gputrain's threaded loader vs PyTorch's DataLoader, side by side in one run, same files.

Two cases, each written here first:
  npy   features.npy (N x 256 float32, memory-mapped by both sides) and labels.npy
  jpeg  a class-per-folder tree of small JPEGs (64x64, written by Pillow), decoded to uint8 CHW
        at their own size (gputrain: libjpeg-turbo; PyTorch: Pillow's libjpeg-turbo + numpy)
For every worker count both sides deliver shuffled batches of the same size; a run is a warm-up
then --batches timed batches; each (side, workers) runs --runs times and the figure is the
median samples/s. The comparison is best worker count against best worker count (the issue's
goal: gputrain >= 1.5x). gputrain's side is `gputrain profile --json` with data.cache none, so
the loader itself is measured, not the in-memory cache.

Usage: bench/loader_vs_dataloader.py [--cases npy,jpeg] [--runs 3] [--workers 0,1,2]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPUTRAIN = os.path.join(ROOT, os.environ.get("GPUTRAIN_BUILD", "build"), "bin", "gputrain")


class NpyRows(Dataset):
    def __init__(self, features, labels):
        self.x = np.load(features, mmap_mode="r")
        self.y = np.load(labels, mmap_mode="r")

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return torch.from_numpy(np.array(self.x[i])), int(self.y[i])


class JpegFolder(Dataset):
    def __init__(self, root):
        self.files = []
        for label, name in enumerate(sorted(os.listdir(root))):
            folder = os.path.join(root, name)
            self.files += [(os.path.join(folder, f), label) for f in sorted(os.listdir(folder))]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        path, label = self.files[i]
        with Image.open(path) as image:
            pixels = np.asarray(image.convert("RGB"))
        return torch.from_numpy(pixels.transpose(2, 0, 1).copy()), label


def torch_rate(dataset, workers, batch, batches, runs, warmup=3):
    loader = DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=workers, persistent_workers=workers > 0,
                        drop_last=True, generator=torch.Generator().manual_seed(0))
    rates = []
    iterator = iter(loader)

    def take():
        nonlocal iterator
        try:
            return next(iterator)
        except StopIteration:
            iterator = iter(loader)
            return next(iterator)

    for _ in range(runs):
        for _ in range(warmup):
            take()
        start = time.perf_counter()
        for _ in range(batches):
            take()
        rates.append(batches * batch / (time.perf_counter() - start))
    return statistics.median(rates)


def gputrain_rates(args_for_data, workers, batch, batches, runs):
    command = [GPUTRAIN, "profile", "--json", "--set", "device=cpu", "--set", "data.cache=none", "--set", f"train.batch_size={batch}",
               "--repeats", str(runs), "--batches", str(batches), "--workers", *map(str, workers)] + args_for_data
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("gputrain profile failed:\n" + result.stderr)
    doc = json.loads(result.stdout)
    best = {}
    for r in doc["results"]:
        if r["cache"] == "none":
            best[r["workers"]] = max(best.get(r["workers"], 0), r["samples_per_second"])  # best prefetch per count
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="npy,jpeg")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", default="0,1,2")
    parser.add_argument("--batches", type=int, default=30)
    args = parser.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
          f"{time.strftime('%Y-%m-%d')}")
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases.split(","):
            if case == "npy":
                n, batch = 100_000, 256
                features, labels = os.path.join(tmp, "features.npy"), os.path.join(tmp, "labels.npy")
                np.save(features, np.random.default_rng(0).standard_normal((n, 256), dtype=np.float32))
                np.save(labels, (np.arange(n) % 10).astype(np.int64))
                dataset = NpyRows(features, labels)
                data_args = ["--source", "npy", "--path", features, "--labels", labels]
                what = f"npy: {n} x 256 float32, batch {batch}"
            elif case == "jpeg":
                n, batch = 4000, 64
                root = os.path.join(tmp, "jpeg")
                rng = np.random.default_rng(1)
                for i in range(n):
                    folder = os.path.join(root, f"class{i % 10}")
                    os.makedirs(folder, exist_ok=True)
                    pixels = (rng.random((64, 64, 3)) * 64 + np.linspace(0, 180, 64)[None, :, None]).astype(np.uint8)
                    Image.fromarray(pixels).save(os.path.join(folder, f"{i:05d}.jpg"), quality=90)
                dataset = JpegFolder(root)
                data_args = ["--source", "image_folder", "--path", root, "--set", "data.image_size=[64,64]"]
                what = f"jpeg: {n} files of 64x64, batch {batch}"
            else:
                sys.exit("unknown case " + case)
            ours = gputrain_rates(data_args, workers, batch, args.batches, args.runs)
            theirs = {w: torch_rate(dataset, w, batch, args.batches, args.runs) for w in workers}
            print(f"\n## {what}")
            print("| workers | gputrain samples/s | DataLoader samples/s | ratio |")
            print("| --- | --- | --- | --- |")
            for w in workers:
                print(f"| {w} | {ours[w]:,.0f} | {theirs[w]:,.0f} | {ours[w] / theirs[w]:.2f}x |")
            best_ours, best_theirs = max(ours, key=ours.get), max(theirs, key=theirs.get)
            print(f"| best | {ours[best_ours]:,.0f} ({best_ours} workers) | {theirs[best_theirs]:,.0f} ({best_theirs} workers) | "
                  f"**{ours[best_ours] / theirs[best_theirs]:.2f}x** |")


if __name__ == "__main__":
    main()
