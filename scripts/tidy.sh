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
exec clang-tidy -p "$build" --quiet "${files[@]}"
