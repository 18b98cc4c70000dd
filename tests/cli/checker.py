"""What the CLI checkers share: failing with a message, and their `WORKDIR -- COMMAND...` arguments."""
import os
import shutil
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
