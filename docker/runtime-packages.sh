#!/bin/sh
# The Debian/Ubuntu packages holding the shared libraries that FILEs load, other than LibTorch's
# and the CUDA wheels' own (the image copies those as files): what the runtime image installs.
# usage: docker/runtime-packages.sh FILE...
set -eu
loaded=$(ldd "$@")
missing=$(echo "$loaded" | awk '$2 == "=>" && $3 == "not" {print $1}' | sort -u)
if [ -n "$missing" ]; then
  echo "error: these libraries are not found: $missing" >&2
  exit 1
fi
echo "$loaded" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
  case "$(realpath "$lib")" in */site-packages/*) continue ;; esac
  # dpkg knows a file by the folder its package put it in: /lib or /usr/lib, one the other's link.
  for path in "$lib" "/usr$lib" "${lib#/usr}"; do
    owner=$(dpkg -S "$path" 2>/dev/null) && { echo "$owner" | head -n 1 | cut -d: -f1; break; }
  done
done | sort -u
