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
# without it, as each must compile alone (cmake/GputrainPch.cmake).
db=$(mktemp -d)
trap 'rm -rf "$db"' EXIT
python3 - "$build/compile_commands.json" "$db/compile_commands.json" <<'PY'
import json, re, sys
entries = json.load(open(sys.argv[1]))
for entry in entries:
    entry["command"] = re.sub(r" -include \S+cmake_pch\.hxx| -Winvalid-pch", "", entry["command"])
json.dump(entries, open(sys.argv[2], "w"))
PY
clang-tidy -p "$db" --quiet "${files[@]}"
