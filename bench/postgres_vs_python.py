#!/usr/bin/env python3
"""Training data from PostgreSQL: gputrain's data.source postgres vs the Python ways, one run.

The table: --rows rows (1,000,000) of 64 float4 columns and an int label, on a server on this
machine (started here with tests/postgres/pg_server.py unless --dsn names one). Each side runs
--runs times, interleaved; the figures are medians, with the runs' spread.

Load into training memory (float32 features and int64 labels as torch tensors):
  raw COPY        psql: COPY (query) TO STDOUT (FORMAT binary) into /dev/null: what one server
                  process and the socket deliver, the ceiling for a reader of one stream
  gputrain        gputrain train with data.source postgres, max_steps 1: the data read time its
                  metrics.jsonl records (connect, COPY, decode into the tensors), data.streams
                  auto (several COPY streams, one per core up to 4: docs/data.md)
  gputrain, one COPY stream   the same with data.streams 1
  psycopg         psycopg 3: cursor.fetchall() -> numpy -> torch.from_numpy, the common way
  pandas          pandas.read_sql over SQLAlchemy -> to_numpy -> torch, the other common way
Goals (issue #49): gputrain >= 5x psycopg, and >= 80 % of the raw COPY's throughput.

An epoch's samples: gputrain's training samples/s from its cache (a small MLP, CPU) against the
seed's "before" (shared/seeds/002): a torch DataLoader whose dataset queries the server for
each batch of 256 rows. Goal >= 50x.

Needs: psycopg[binary], pandas and sqlalchemy in .venv (.venv/bin/pip install "psycopg[binary]"
pandas sqlalchemy; not gputrain dependencies), and Debian's postgresql for the server.
Usage: .venv/bin/python bench/postgres_vs_python.py [--rows 1000000] [--runs 3] [--dsn DSN]
"""
import argparse
import json
import os
import platform
import shutil
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
COLUMNS = ["f%d" % i for i in range(64)]
QUERY = "SELECT %s, label FROM bench_rows" % ", ".join(COLUMNS)


def make_table(dsn, rows):
    columns = ", ".join("random()::float4 AS %s" % c for c in COLUMNS)
    sql = ("SET client_min_messages = warning; DROP TABLE IF EXISTS bench_rows; CREATE TABLE bench_rows AS "
           "SELECT g AS id, %s, g %% 10 AS label FROM generate_series(1, %d) g; ANALYZE bench_rows;" % (columns, rows))
    subprocess.run(["psql", dsn, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql], check=True)


def raw_copy(dsn):
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        subprocess.run(["psql", dsn, "-c", "COPY (%s) TO STDOUT (FORMAT binary)" % QUERY], stdout=sink, check=True)
    return time.perf_counter() - start


def copy_bytes(dsn):
    out = subprocess.run(["psql", dsn, "-c", "COPY (%s) TO STDOUT (FORMAT binary)" % QUERY], capture_output=True, check=True)
    return len(out.stdout)


def gputrain_load(dsn, workdir, streams="auto"):
    run_dir = os.path.join(workdir, "gputrain-run")
    shutil.rmtree(run_dir, ignore_errors=True)
    subprocess.run([GPUTRAIN, "train", "--set", "data.source=postgres", "--set", "data.dsn=" + dsn, "--set", "data.query=" + QUERY,
                    "--set", "data.streams=%s" % streams,
                    "--set", "data.labels=label", "--set", "model.name=mlp", "--set", "model.hidden=[8]", "--set", "device=cpu",
                    "--set", "train.max_steps=1", "--set", "train.epochs=1", "--set", "logging.progress=off",
                    "--set", "logging.dir=" + run_dir, "--set", "checkpoint.resume=never", "--set", "checkpoint.best_metric=none",
                    "--set", "checkpoint.every_epochs=0"], check=True, capture_output=True)
    start = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl")) if '"kind":"start"' in l][0]
    return start["data_read_seconds"]


def psycopg_load(dsn):
    import psycopg
    start = time.perf_counter()
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(QUERY).fetchall()
    table = np.array(rows, dtype=np.float32)
    x, y = torch.from_numpy(table[:, :-1].copy()), torch.from_numpy(table[:, -1].astype(np.int64))
    assert x.shape[1] == 64 and y.shape[0] == x.shape[0]
    return time.perf_counter() - start


def pandas_load(dsn):
    import pandas as pd
    import sqlalchemy
    import psycopg
    engine = sqlalchemy.create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(dsn))
    start = time.perf_counter()
    frame = pd.read_sql(QUERY, engine)
    with warnings.catch_warnings():  # a read-only view of the frame's block: used as it is, not written
        warnings.simplefilter("ignore", UserWarning)
        x = torch.from_numpy(frame[COLUMNS].to_numpy(np.float32))
    y = torch.from_numpy(frame["label"].to_numpy(np.int64))
    assert x.shape[1] == 64 and y.shape[0] == x.shape[0]
    engine.dispose()
    return time.perf_counter() - start


def per_batch_queries(dsn, batches, batch=256):
    """The seed's loader: each batch is a query of its own (here on one connection, which is
    kinder than the seed's session per item). Samples per second."""
    import psycopg

    class Rows(torch.utils.data.Dataset):
        def __init__(self):
            self.conn = psycopg.connect(dsn)

        def __len__(self):
            return batches

        def __getitem__(self, i):
            rows = self.conn.execute("SELECT %s, label FROM bench_rows WHERE id > %%s AND id <= %%s" % ", ".join(COLUMNS),
                                     (i * batch, (i + 1) * batch)).fetchall()
            table = np.array(rows, dtype=np.float32)
            return torch.from_numpy(table[:, :-1].copy()), torch.from_numpy(table[:, -1].astype(np.int64))

    loader = torch.utils.data.DataLoader(Rows(), batch_size=None, num_workers=0)
    start = time.perf_counter()
    samples = sum(x.shape[0] for x, _ in loader)
    return samples / (time.perf_counter() - start)


def gputrain_epoch(dsn, workdir, rows):
    run_dir = os.path.join(workdir, "gputrain-epoch")
    shutil.rmtree(run_dir, ignore_errors=True)
    subprocess.run([GPUTRAIN, "train", "--set", "data.source=postgres", "--set", "data.dsn=" + dsn, "--set", "data.query=" + QUERY,
                    "--set", "data.labels=label", "--set", "model.name=mlp", "--set", "model.hidden=[8]", "--set", "device=cpu",
                    "--set", "train.batch_size=256", "--set", "train.epochs=1", "--set", "train.max_steps=%d" % min(2000, rows // 256),
                    "--set", "logging.every_steps=200", "--set", "logging.progress=off", "--set", "logging.dir=" + run_dir,
                    "--set", "checkpoint.resume=never", "--set", "checkpoint.best_metric=none", "--set", "checkpoint.every_epochs=0"],
                   check=True, capture_output=True)
    steps = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl")) if '"kind":"step"' in l]
    return statistics.median(s["samples_per_second"] for s in steps[1:])


def spread(values):
    return "%.2f-%.2f" % (min(values), max(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1000000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dsn", help="a server to use instead of starting one (its table bench_rows is replaced)")
    args = parser.parse_args()
    try:
        import pandas  # noqa: F401
        import psycopg  # noqa: F401
        import sqlalchemy  # noqa: F401
    except ImportError:
        sys.exit('psycopg, pandas and sqlalchemy are not installed: .venv/bin/pip install "psycopg[binary]" pandas sqlalchemy')
    with tempfile.TemporaryDirectory() as workdir:
        server = os.path.join(workdir, "server")
        if not args.dsn:
            subprocess.run([sys.executable, os.path.join(ROOT, "tests", "postgres", "pg_server.py"), "start", server], check=True)
            env = dict(line.strip().split("=", 1) for line in open(os.path.join(server, "server.env")))
            args.dsn = "host=%s port=%s user=%s dbname=postgres" % (env["socket_dir"], env["port"], env["user"])
        try:
            make_table(args.dsn, args.rows)
            mb = copy_bytes(args.dsn) / 1e6
            sides = {"raw COPY (psql)": lambda: raw_copy(args.dsn), "gputrain": lambda: gputrain_load(args.dsn, workdir),
                     "gputrain, one COPY stream": lambda: gputrain_load(args.dsn, workdir, 1),
                     "psycopg fetchall": lambda: psycopg_load(args.dsn), "pandas.read_sql": lambda: pandas_load(args.dsn)}
            seconds = {name: [] for name in sides}
            for _ in range(args.runs):
                for name, load in sides.items():
                    seconds[name].append(load())
            print("# data.source postgres vs Python, %d rows x 64 float4 + label (%.0f MB as binary COPY), %s, %d cores, %s, "
                  "medians of %d runs\n" % (args.rows, mb, platform.processor() or platform.machine(), os.cpu_count(),
                                            time.strftime("%Y-%m-%d"), args.runs))
            ours = statistics.median(seconds["gputrain"])
            print("| load | seconds | runs | rows/s | MB/s | gputrain's speed-up |")
            print("| --- | ---: | ---: | ---: | ---: | ---: |")
            for name, values in seconds.items():
                median = statistics.median(values)
                print("| %s | %.2f | %s | %.0f | %.0f | %.2fx |" % (name, median, spread(values), args.rows / median, mb / median, median / ours))
            raw = statistics.median(seconds["raw COPY (psql)"])
            print("\ngputrain reads at %.0f %% of the raw COPY's throughput (goal >= 80 %%); %.1fx psycopg (goal >= 5x)"
                  % (100 * raw / ours, statistics.median(seconds["psycopg fetchall"]) / ours))
            batches = min(400, args.rows // 256)
            before = [per_batch_queries(args.dsn, batches) for _ in range(args.runs)]
            cached = [gputrain_epoch(args.dsn, workdir, args.rows) for _ in range(args.runs)]
            print("\nAn epoch's samples/s: gputrain from its cache %.0f (runs %s) vs a query per batch of 256 %.0f (runs %s): %.0fx "
                  "(goal >= 50x)" % (statistics.median(cached), [round(c) for c in cached], statistics.median(before),
                                     [round(b) for b in before], statistics.median(cached) / statistics.median(before)))
        finally:
            if os.path.isdir(server):
                subprocess.run([sys.executable, os.path.join(ROOT, "tests", "postgres", "pg_server.py"), "stop", server])


if __name__ == "__main__":
    main()
