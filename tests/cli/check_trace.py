#!/usr/bin/env python3
"""`gputrain profile --trace FILE CONFIG`: the file is a Chrome Trace Format document (what
ui.perfetto.dev and chrome://tracing open) holding gputrain's named ranges and the CPU operators.

Usage: check_trace.py TRACE_PATH -- GPUTRAIN_PROFILE_COMMAND...

The Perfetto trace processor from PyPI fetches its engine from the network when first used, which
the test machines cannot: the document is checked against the format itself instead (a
traceEvents list; complete events with name, ph X, ts, dur, pid and tid).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail  # noqa: E402


def main():
    path, command = sys.argv[1], sys.argv[3:]
    if os.path.exists(path):
        os.remove(path)
    result = subprocess.run(command + ["--trace", path], capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"{' '.join(command)} --trace exited {result.returncode}:\n{result.stderr}")
    if f"trace of 5 steps after the timed ones: {path}" not in result.stderr:
        fail(f"the command did not say where the trace is:\n{result.stderr}")
    # Off a GPU, Kineto's ERROR line about the GPUs it cannot count is silenced: nothing failed.
    kineto = [line for line in result.stderr.splitlines() if line.startswith("ERROR:")]
    if kineto:
        fail(f"the profiler's own error lines reached the user: {kineto}")
    with open(path) as f:
        trace = json.load(f)
    events = trace.get("traceEvents")
    if not isinstance(events, list) or not events:
        fail("no traceEvents list")
    complete = [e for e in events if e.get("ph") == "X"]
    for event in complete:
        missing = [k for k in ("name", "ts", "dur", "pid", "tid") if k not in event]
        if missing:
            fail(f"a complete event lacks {missing}: {event}")
    names = {e["name"] for e in complete}
    for wanted in ("gputrain::data_wait", "gputrain::forward", "gputrain::backward", "gputrain::optimizer"):
        if wanted not in names:
            fail(f"{wanted} is not in the trace")
    operators = [n for n in names if n.startswith("aten::")]
    if len(operators) < 5:
        fail(f"few CPU operators in the trace: {operators}")
    steps = sum(1 for e in complete if e["name"] == "gputrain::optimizer")
    if steps != 5:
        fail(f"{steps} optimizer steps traced, expected 5")
    print(f"ok: {len(complete)} complete events, {len(operators)} kinds of ATen operator, 5 steps with gputrain's ranges")


if __name__ == "__main__":
    main()
