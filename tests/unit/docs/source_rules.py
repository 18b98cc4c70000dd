"""What the source checks in this folder share: the repository root and how a check ends."""
import os
import sys


def repo_root():
    """The repository: the first argument, else three folders above this file's."""
    return sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def finish(problems):
    """Prints each problem and the closing count ctest's log shows; returns the exit code."""
    for p in problems:
        print(p)
    print(f"{0 if problems else 1} passed, {1 if problems else 0} failed")
    return 1 if problems else 0
