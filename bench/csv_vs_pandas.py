#!/usr/bin/env python3
"""Reading a tabular CSV: gputrain vs pandas.read_csv, side by side in one run, same file.

The file is the seeds' tabular case at its large end: --rows samples of --columns float features
and an integer class label, written by pandas' to_csv (full-precision floats, as users' files
have them). Each side turns it into a float32 feature tensor and an int64 label tensor:
  gputrain        `gputrain train` on it (one step), its metrics.jsonl `data_read_seconds`: mapping
                  the file, parsing it and building the tensors; with OMP_NUM_THREADS=1 and with
                  every core (gputrain parses stretches of whole rows on LibTorch's thread count)
  pandas (C)      pd.read_csv(path) -> df.to_numpy(float32) -> torch.from_numpy, timed in-process
                  (Python's start-up and imports are not counted); pandas' default engine, 1 thread
  pandas (arrow)  the same with engine="pyarrow", which parses on every core
Each is run --runs times after a warm-up (the file stays in the page cache); the figure is the
median. Parsing text is CPU-bound: MB/s per core is the figure to compare with a core's speed.

A second file adds two columns of categories (a port of 3 values, a grade of 12), one-hot encoded
on each side: gputrain's data.categorical against pd.get_dummies(..., dtype=float32) after
read_csv, so the cost of the categories shows beside the plain file's.

Needs: pandas and pyarrow in .venv (.venv/bin/pip install pandas pyarrow; not gputrain dependencies).
Usage: .venv/bin/python bench/csv_vs_pandas.py [--rows 100000] [--columns 300] [--runs 5]
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
import warnings

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPUTRAIN = os.path.join(ROOT, os.environ.get("GPUTRAIN_BUILD", "build"), "bin", "gputrain")


def gputrain_seconds(config, tmp, threads, runs):
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    times = []
    for run in range(runs + 1):  # the first is the warm-up
        run_dir = os.path.join(tmp, f"run-{threads}-{run}")
        subprocess.run([GPUTRAIN, "train", config, "--set", f"logging.dir={run_dir}"], check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            start = json.loads(f.readline())
        if run:
            times.append(start["data_read_seconds"])
    return statistics.median(times)


def pandas_seconds(path, features, label, engine, runs, categorical=()):
    import pandas as pd

    # pandas 3's arrays are read-only views (copy-on-write); from_numpy shares them, as a reader would.
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    times = []
    for run in range(runs + 1):
        start = time.perf_counter()
        frame = pd.read_csv(path, engine=engine)
        columns = frame[features + list(categorical)]
        if categorical:
            columns = pd.get_dummies(columns, columns=list(categorical), dtype=np.float32)
        inputs = torch.from_numpy(columns.to_numpy(np.float32))
        targets = torch.from_numpy(frame[label].to_numpy(np.int64))
        elapsed = time.perf_counter() - start
        assert inputs.shape[0] == len(frame) and targets.shape == (len(frame),)
        if run:
            times.append(elapsed)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--columns", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    try:
        import pandas as pd
        import pyarrow  # noqa: F401
    except ImportError:
        sys.exit("pandas and pyarrow are not installed: .venv/bin/pip install pandas pyarrow")
    if not os.path.exists(GPUTRAIN):
        sys.exit(f"{GPUTRAIN} is missing: build first (./scripts/bootstrap.sh)")

    cores = len(os.sched_getaffinity(0))
    print(f"# {platform.processor() or platform.machine()}, {cores} usable cores, torch {torch.__version__}, "
          f"pandas {pd.__version__}, {time.strftime('%Y-%m-%d')}")
    with tempfile.TemporaryDirectory() as tmp:
        features = [f"f{i}" for i in range(args.columns)]
        rng = np.random.default_rng(0)
        frame = pd.DataFrame(rng.standard_normal((args.rows, args.columns), dtype=np.float32), columns=features)
        frame["label"] = rng.integers(0, 10, args.rows)
        plain = os.path.join(tmp, "tabular.csv")
        frame.to_csv(plain, index=False)
        frame["port"] = rng.choice(["S", "C", "Q"], args.rows)
        frame["grade"] = [f"g{i}" for i in rng.integers(0, 12, args.rows)]
        with_categories = os.path.join(tmp, "categories.csv")
        frame.to_csv(with_categories, index=False)
        del frame
        categorical = ["port", "grade"]
        for name, path, categories in (("float columns + a label", plain, []),
                                       ("float columns + 2 columns of categories (3 and 12) + a label", with_categories, categorical)):
            runs_dir = os.path.join(tmp, os.path.basename(path) + "-runs")  # a run folder per file: a used one resumes
            os.makedirs(runs_dir)
            config = os.path.join(runs_dir, "tabular.yaml")
            with open(config, "w") as f:
                f.write(f"data:\n  source: csv\n  path: {path}\n  labels: label\n  categorical: [{', '.join(categories)}]\n"
                        "model:\n  name: mlp\ntrain:\n  max_steps: 1\n")
            rows = [
                ("gputrain", 1, gputrain_seconds(config, runs_dir, 1, args.runs)),
                ("gputrain", cores, gputrain_seconds(config, runs_dir, None, args.runs)),
                ("pandas (C engine)", 1, pandas_seconds(path, features, "label", "c", args.runs, categories)),
                ("pandas (pyarrow engine)", cores, pandas_seconds(path, features, "label", "pyarrow", args.runs, categories)),
            ]
            print_table(f"{args.rows:,} rows x {args.columns} {name}", os.path.getsize(path) / 1e6, rows, args.runs)


def print_table(title, megabytes, rows, runs):
    baseline = rows[2][2]
    print(f"\n{title}, {megabytes:.0f} MB of CSV; median of {runs} runs")
    print("| reader | threads | seconds | MB/s | MB/s per thread | vs pandas (C engine) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, threads, seconds in rows:
        print(f"| {name} | {threads} | {seconds:.2f} | {megabytes / seconds:.0f} | {megabytes / seconds / threads:.0f} | "
              f"{baseline / seconds:.2f}x |")


if __name__ == "__main__":
    main()
