"""What the CLI checkers share: failing with a message, running a command, a run's step records, skipping
without a reader, and their `WORKDIR -- COMMAND...` arguments."""
import json
import os
import shutil
import subprocess
import sys


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def fresh_workdir_and_command(usage):
    """WORKDIR (emptied and made anew) and the command after `--`; `usage` when they are missing."""
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        fail(usage)
    workdir, command = sys.argv[1], sys.argv[3:]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    return workdir, command

def run(command, **kwargs):
    print("+ " + " ".join(command), flush=True)
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


def step_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if '"kind": "step"' in line or '"kind":"step"' in line]


def require(*modules):
    """Exits 77 (ctest: skipped) when a reader is missing, e.g. on the offline GPU machine."""
    import importlib.util
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        print("SKIP: Python packages missing: %s (scripts/requirements.txt installs them)" % ", ".join(missing))
        sys.exit(77)
