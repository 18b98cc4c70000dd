#!/usr/bin/env bash
# Packs the Debian -dev packages the build needs (headers, CMake configs, libraries) into
# .device-deps/, for the GPU machine, which has CUDA, CMake, ninja and torch but no network and
# none of these packages. Carry it with the device tool: carry: [".device-deps"].
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=$root/.device-deps
packages=(libcli11-dev libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 nlohmann-json3-dev libgtest-dev libgmock-dev googletest
          libyaml-cpp-dev libyaml-cpp0.7 libzip-dev libzip4 libutf8proc-dev libutf8proc2 libjpeg62-turbo-dev libjpeg62-turbo libpng-dev libpng16-16
          zlib1g-dev libpq-dev libpq5 libgloo-dev)
rm -rf "$dest"; mkdir -p "$dest"
for p in "${packages[@]}"; do
  dpkg-query -L "$p" | while read -r f; do
    [ -f "$f" ] || continue
    case "$f" in /usr/share/doc/*|/usr/src/*|/usr/share/lintian/*) continue ;; esac
    mkdir -p "$dest$(dirname "$f")"; cp -a "$f" "$dest$f"
  done
done
# Keep the library symlinks (libfmt.so -> libfmt.so.9 ...) that dpkg lists as links.
for p in "${packages[@]}"; do
  dpkg-query -L "$p" | while read -r f; do
    if [ -L "$f" ]; then mkdir -p "$dest$(dirname "$f")"; cp -a "$f" "$dest$f"; fi
  done
done
# libpq's own libraries (LDAP, Kerberos, TLS, ...): the GPU machine may lack some, and the linker
# needs every one of them to link a program against libpq. glibc's stay behind (the machine's own).
ldd /usr/lib/x86_64-linux-gnu/libpq.so.5 | awk '$3 ~ /^\// {print $3}' \
  | grep -vE '/(libc|libm|libresolv|libpthread|libdl|ld-linux[^/]*)\.so' \
  | while read -r lib; do cp -L "$lib" "$dest/usr/lib/x86_64-linux-gnu/"; done
du -sh "$dest"
