#!/usr/bin/env bash
# Runs clang-tidy (the committed .clang-tidy) over the given sources, or those changed since main's
# upstream when none are given. It needs build/compile_commands.json (CMake writes it). LibTorch's
# headers make each file take 10-30 s on 2 cores, so the whole tree is not checked on every change.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${GPUTRAIN_BUILD_DIR:-build}
[ -f "$build/compile_commands.json" ] || { echo "no $build/compile_commands.json: build first (scripts/bootstrap.sh build)" >&2; exit 2; }
if [ $# -eq 0 ]; then
  mapfile -t files < <(git diff --name-only --diff-filter=AM HEAD -- '*.cpp' | grep -E '^(src|tools)/' || true)
else
  files=("$@")
fi
[ ${#files[@]} -gt 0 ] || { echo "nothing to check"; exit 0; }
# The build's precompiled header is GCC's (.gch), which clang cannot read: the files are checked
# without it, as each must compile alone (cmake/GputrainPch.cmake). A unity build's batch file
# (cmake/GputrainUnity.cmake) stands for the files it includes: each gets the batch's command.
db=$(mktemp -d)
trap 'rm -rf "$db"' EXIT
python3 - "$build/compile_commands.json" "$db/compile_commands.json" <<'PY'
import json, os, re, sys
checked = []
for entry in json.load(open(sys.argv[1])):
    entry["command"] = re.sub(r" -include \S+cmake_pch\.hxx| -Winvalid-pch", "", entry["command"])
    checked.append(entry)
    if re.search(r"/unity/[^/]+_[0-9]+\.cpp$", entry["file"]):
        folder = os.path.dirname(entry["file"])
        for included in re.findall(r'^#include "(.+)"$', open(entry["file"]).read(), re.M):
            source = os.path.normpath(os.path.join(folder, included))
            checked.append(dict(entry, file=source, command=entry["command"].replace(entry["file"], source)))
json.dump(checked, open(sys.argv[2], "w"))
PY
clang-tidy -p "$db" --quiet "${files[@]}"
