#!/usr/bin/env bash
# Formats the C++ sources with the committed .clang-format (clang-format 14, Debian's).
#   scripts/format.sh           rewrite every file in place
#   scripts/format.sh --check   list the files that are not formatted; exit 1 if any (CI runs this)
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp' '*.cu' '*.h')  # new files too
if [ "${1:-}" = "--check" ]; then
  bad=0
  for f in "${files[@]}"; do
    if ! clang-format --style=file "$f" | cmp -s - "$f"; then echo "not formatted: $f (run scripts/format.sh)"; bad=1; fi
  done
  exit $bad
fi
clang-format --style=file -i "${files[@]}"
