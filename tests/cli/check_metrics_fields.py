#!/usr/bin/env python3
"""docs/metrics.md lists every field metrics.jsonl writes, and nothing it does not (#51).

Usage: check_metrics_fields.py SOURCE_DIR WORKDIR -- GPUTRAIN_TRAIN_COMMAND...

- Runs: a classification and a regression run, with validation and train.ema_decay, the first with
  an alert set to fire. Every field their records hold must be in docs/metrics.md's table for that
  kind, and every field the table marks `always` must be in each record of the kind (system
  records' GPU fields are for GPU runs).
- The oom record (hard to provoke in a test this short): the fields the JSONL sink's code writes for
  it (src/train/report/file_sinks.cpp) must be the table's.
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail  # noqa: E402


def documented(path):
    """{kind: {field: always?}} from the tables under "## `kind: X`" headings."""
    tables, kind = {}, None
    with open(path) as f:
        for line in f:
            heading = re.match(r"## `kind: (\w+)`", line)
            if heading:
                kind = heading.group(1)
                tables[kind] = {}
            elif kind and line.startswith("| `"):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                for name in re.findall(r"`(\w+)`", cells[0]):
                    tables[kind][name] = cells[1] == "always"
    return tables


def written_by_code(source):
    """The keys the JSONL sink writes for `kind` oom, read from its code."""
    with open(source) as f:
        code = f.read()
    body = code[code.index('{"kind", "oom"}'):]
    body = body[:body.index("e.step);")]
    return set(re.findall(r'\{"(\w+)",', body)) | {"schema", "time"}


def records(command, workdir, name, *settings):
    run_dir = os.path.join(workdir, name)
    args = command + ["--set", "device=cpu", "--set", "model.name=mlp", "--set", "model.hidden=[8]", "--set", "data.shape=[4]",
                      "--set", "data.samples=64", "--set", "data.val_samples=16", "--set", "train.batch_size=16",
                      "--set", "train.epochs=2", "--set", "logging.every_steps=2", "--set", "logging.progress=lines",
                      "--set", "logging.tensorboard=false", "--set", f"logging.dir={run_dir}", *settings]
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"{' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        fail("usage: check_metrics_fields.py SOURCE_DIR WORKDIR -- GPUTRAIN_TRAIN_COMMAND...")
    source, workdir, command = sys.argv[1], sys.argv[2], sys.argv[4:]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    tables = documented(os.path.join(source, "docs", "metrics.md"))
    if sorted(tables) != ["alert", "epoch", "oom", "start", "step", "system"]:
        fail(f"docs/metrics.md documents the kinds {sorted(tables)}")
    written = records(command, workdir, "classification", "--set", "data.classes=3", "--set", "train.ema_decay=0.9",
                      "--set", "logging.alerts.grad_norm=0.000001") + \
        records(command, workdir, "regression", "--set", "data.task=regression", "--set", "data.outputs=2",
                "--set", "train.ema_decay=0.9")
    seen = {}
    for record in written:
        kind = record["kind"]
        table = tables.get(kind)
        if table is None:
            fail(f"metrics.jsonl has a record of kind {kind!r}, which docs/metrics.md does not document")
        undocumented = sorted(set(record) - set(table))
        if undocumented:
            fail(f"a {kind} record has fields docs/metrics.md does not list: {undocumented}")
        missing = sorted(name for name, always in table.items() if always and name not in record)
        if missing:
            fail(f"a {kind} record lacks fields docs/metrics.md says are always there: {missing}")
        seen.setdefault(kind, set()).update(record)
    for kind in ("start", "step", "epoch", "alert"):
        never = sorted(set(tables[kind]) - seen.get(kind, set()))
        if never:
            fail(f"docs/metrics.md lists {kind} fields no test run wrote: {never}")
    oom_code = written_by_code(os.path.join(source, "src", "train", "report", "file_sinks.cpp"))
    if oom_code != set(tables["oom"]):
        fail(f"oom fields: the code writes {sorted(oom_code)}, docs/metrics.md lists {sorted(tables['oom'])}")
    print(f"ok: {len(written)} records of {len(seen)} kinds, and the oom record's {len(oom_code)} fields, match docs/metrics.md")


if __name__ == "__main__":
    main()
