#!/usr/bin/env python3
"""The installed headers (include/gputrain/) need nothing but the C++ standard library, LibTorch
(ATen, c10, torch) and each other: gputrainConfig.cmake finds LibTorch and Threads only, so a
header that included a JSON, YAML or logging library would break every consumer's build on a
machine without it. Prints each include that breaks the rule; exits 1 when there is one.

Usage: check_public_headers.py [REPO_ROOT]
"""
import os
import re
import sys

from source_rules import finish, repo_root

ALLOWED_PREFIXES = ("ATen/", "c10/", "torch/", "gputrain/")
# The C++ standard headers have no extension and no folder; the few C headers used are POSIX's.
ALLOWED_C_HEADERS = {"signal.h", "unistd.h", "sys/types.h"}


def main():
    root = repo_root()
    include = os.path.join(root, "include")
    problems = []
    for dirpath, _, files in os.walk(include):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            for number, line in enumerate(open(path, encoding="utf-8"), 1):
                match = re.match(r'\s*#\s*include\s*[<"]([^>"]+)[>"]', line)
                if not match:
                    continue
                header = match.group(1)
                standard = "/" not in header and "." not in header
                if standard or header.startswith(ALLOWED_PREFIXES) or header in ALLOWED_C_HEADERS:
                    continue
                problems.append(f"{rel}:{number}: includes <{header}>, which an installed gputrain's consumers may not have: "
                                "keep it in the .cpp (or a private header under src/)")
    return finish(problems)


if __name__ == "__main__":
    sys.exit(main())
