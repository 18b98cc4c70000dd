#!/usr/bin/env python3
"""Names from data reach the console as text, never as terminal control.

Usage: check_control_characters.py WORKDIR -- GPUTRAIN_TRAIN_COMMAND...

CSV class names and cells can hold any character: an escape sequence (colour, a cleared screen,
the window's title), a carriage return that overwrites the line, a newline in a quoted cell. They
were printed raw in the per-class report, the notes, training.log and error messages. Each must
now print as an escape (`\\x1b`, `\\r`, and `\\n` inside a quoted name), the run train and
evaluate as before, and `--evaluate --json` give the names byte for byte.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail, fresh_workdir_and_command, run  # noqa: E402

CLASSES = ["ok", "\x1b[31mred\x1b[0m", "two\nlines", "cr\rover", "csi\u009b2J"]
CONTROLS = [chr(c) for c in range(32) if chr(c) not in "\n\t"] + ["\x7f", "\u009b"]


def csv_cell(text):
    return '"' + text.replace('"', '""') + '"'


def write_csv(path, last_row=None):
    rows = ["x1,x2,label"] + [f"{i % 7 / 7},{i % 5 / 5},{csv_cell(CLASSES[i % len(CLASSES)])}" for i in range(60)]
    if last_row:
        rows.append(last_row)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("\n".join(rows) + "\n")


def no_controls(where, text):
    found = sorted({repr(c) for c in text if c in CONTROLS})
    if found:
        fail(f"{where} holds terminal controls {', '.join(found)}:\n{text!r}")


def check_run_and_evaluation(workdir, command):
    write_csv(os.path.join(workdir, "names.csv"))
    config = os.path.join(workdir, "config.yaml")
    with open(config, "w") as f:
        f.write("model:\n  name: mlp\ndata:\n  path: names.csv\n  labels: label\n  val_path: names.csv\n"
                "train:\n  epochs: 1\n  batch_size: 12\nlogging:\n  dir: run\n  progress: lines\n")
    trained = run(command + [config, "--set", "device=cpu"], cwd=workdir)
    if trained.returncode != 0:
        fail(f"the run: exit {trained.returncode}\n{trained.stderr}")
    no_controls("the run's output", trained.stderr)
    with open(os.path.join(workdir, "run", "training.log"), encoding="utf-8") as f:
        no_controls("training.log", f.read())

    evaluated = run(command + [config, "--set", "device=cpu", "--evaluate", "run/model.safetensors", "--json"], cwd=workdir)
    if evaluated.returncode != 0:
        fail(f"--evaluate: exit {evaluated.returncode}\n{evaluated.stderr}")
    no_controls("--evaluate's lines", evaluated.stderr)
    per_class = [line for line in evaluated.stderr.splitlines() if line.startswith("per class")]
    if len(per_class) != 1 or "'two\\nlines'" not in per_class[0] or "'\\x1b[31mred\\x1b[0m'" not in per_class[0]:
        fail(f"the per-class line should name every class on one line, escaped:\n{evaluated.stderr}")
    names = [c["name"] for c in json.loads(evaluated.stdout)["classes"]]
    if sorted(names) != sorted(CLASSES):
        fail(f"--json's class names should be the labels as written: {names!r}")
    print("class names with escape sequences, returns and newlines train, evaluate and print as escapes")


def check_error(workdir, command):
    write_csv(os.path.join(workdir, "names.csv"), last_row="0.5,\x1b]0;title\x07,ok")
    result = run(command + [os.path.join(workdir, "config.yaml"), "--set", "device=cpu"], cwd=workdir)
    if result.returncode != 2:
        fail(f"a cell that is no number: exit {result.returncode}, not 2\n{result.stderr}")
    no_controls("the error", result.stderr)
    if "'\\x1b]0;title\\x07' is not a number" not in result.stderr:
        fail(f"the error should show the cell, escaped:\n{result.stderr}")
    print("an error quoting a cell with an escape sequence shows it escaped")


def main():
    workdir, command = fresh_workdir_and_command(__doc__)
    check_run_and_evaluation(workdir, command)
    check_error(workdir, command)


if __name__ == "__main__":
    main()
