#!/usr/bin/env python3
"""Every repository path the docs and the code's comments name exists.

A path is named as `src/...`, `tests/...`, `docs/...` and the other top folders below, with
`{a,b}` standing for each of its spellings (`x.{hpp,cpp}`). A file moved or split leaves its old
name in a comment or a document for a reader to look for in vain; this finds it. Prints each
missing path with where it is named, and exits 1 when there is one.

Usage: check_named_paths.py [REPO_ROOT]
"""
import os
import re
import sys

from source_rules import finish, repo_root

TOP_FOLDERS = ("src", "include", "tools", "tests", "bench", "scripts", "docs", "configs", "docker", "cmake", ".ci")
READ = (".md", ".cpp", ".hpp", ".cu", ".py", ".sh", ".cmake", ".txt", ".yaml", ".yml")
# Folders whose files are data, fixtures or other projects' trees, not text that names ours.
SKIPPED = ("tests/data", "tests/fuzz/corpus", "tests/fuzz/regressions")
NAMED = re.compile(r"(?<![\w/.~$<-])((?:" + "|".join(re.escape(f) for f in TOP_FOLDERS) + r")/[A-Za-z0-9_./{},+-]*[A-Za-z0-9_}])")
# Names that stand for a path rather than being one, each with why.
NOT_PATHS = {
    "configs/my.yaml": "the user's own config in the docs' examples",
    "configs/x.yaml": "a mistyped config name in a suggestion test",
    "configs/mlp.yml": "a mistyped config name in a suggestion test",
    "src/libImaging/Resample.c": "Pillow's source tree",
    "tests/tmp": "a build's scratch folder (<build>/tests/tmp)",
}


def spellings(path):
    """`a/x.{hpp,cpp}` as a/x.hpp and a/x.cpp."""
    braces = re.match(r"(.*)\{(.*?)\}(.*)", path)
    return [braces.group(1) + s + braces.group(3) for s in braces.group(2).split(",")] if braces else [path]


def placeholder(path):
    """A segment in capitals (`tests/fuzz/corpus/TARGET`) names a kind of path, not one."""
    return any(len(part) > 1 and part.isupper() for part in re.split(r"[/.]", path))


def files_to_read(root):
    for name in sorted(os.listdir(root)):
        if name.endswith(".md"):
            yield name
    for folder in TOP_FOLDERS:
        for dirpath, dirnames, files in os.walk(os.path.join(root, folder)):
            rel_dir = os.path.relpath(dirpath, root)
            dirnames[:] = [d for d in dirnames if os.path.join(rel_dir, d) not in SKIPPED and d != "__pycache__"]
            for name in sorted(files):
                if name.endswith(READ):
                    yield os.path.join(rel_dir, name)


def main():
    root = repo_root()
    problems = []
    for rel in files_to_read(root):
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError:
            continue
        for match in NAMED.finditer(text):
            for path in spellings(match.group(1).rstrip(".")):
                if path in NOT_PATHS or placeholder(path) or os.path.exists(os.path.join(root, path)):
                    continue
                line = text.count("\n", 0, match.start()) + 1
                problems.append(f"{rel}:{line}: names {path}, which does not exist: name where it is now, or say it is gone")
    return finish(problems)


if __name__ == "__main__":
    sys.exit(main())
