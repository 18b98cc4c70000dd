#!/usr/bin/env bash
# Installs what is missing, builds gputrain, then runs one job:
#   scripts/bootstrap.sh demo    build, then `gputrain verify --allow-cpu` and
#                                `gputrain quick-train --allow-cpu` (no files or GPU needed)
#   scripts/bootstrap.sh test    build, then the whole test suite (ctest)
#   scripts/bootstrap.sh build   build only
# Idempotent: a second run downloads nothing and takes seconds.
# Environment: GPUTRAIN_CACHE (default ~/.cache/gputrain) holds the Python environment with the
# torch wheel, shared by every clone; GPUTRAIN_BUILD_DIR (default ./build); GPUTRAIN_JOBS;
# GPUTRAIN_WARNINGS_AS_ERRORS=ON (CI's) makes compiler warnings errors, at the first configure.
set -euo pipefail

job=${1:-build}
case "$job" in demo|test|build) ;; *)
  echo "usage: $0 [demo|test|build]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${GPUTRAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gputrain}
build=${GPUTRAIN_BUILD_DIR:-$root/build}
jobs=${GPUTRAIN_JOBS:-$(nproc)}
say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# 1. Debian packages: install only the missing ones (apt-get update only when needed).
packages=(build-essential cmake ninja-build ccache python3 python3-venv pkg-config
          libcli11-dev libspdlog-dev libfmt-dev libyaml-cpp-dev nlohmann-json3-dev
          libgtest-dev libgmock-dev libzip-dev libutf8proc-dev libjpeg62-turbo-dev libpng-dev zlib1g-dev
          librsvg2-2 libopenmpi-dev openmpi-bin libgloo-dev libpq-dev postgresql pgbouncer locales python3-yaml libcurl4-openssl-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  sudo_cmd=(); [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# 2. LibTorch from the torch wheel, in a venv outside the clone (keyed by the requirements),
#    linked as ./.venv so every clone on this machine shares one 4.7 GB install.
req_hash=$(sha256sum "$root/scripts/requirements.txt" | cut -c1-12)
venv=$cache/venv-$req_hash
if [ ! -f "$venv/.complete" ]; then
  say "creating $venv (torch wheel, about 5 GB on disk; pip caches the download)"
  rm -rf "$venv"; mkdir -p "$cache"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --progress-bar off --upgrade pip
  "$venv/bin/pip" install --quiet --progress-bar off -r "$root/scripts/requirements.txt"
  touch "$venv/.complete"
fi
if [ "$(readlink "$root/.venv" 2>/dev/null)" != "$venv" ]; then
  rm -rf "$root/.venv"; ln -s "$venv" "$root/.venv"
fi

# 3. CUDA toolkit 13 (headers and nvcc): the system's (/usr/local/cuda, nvcc on PATH or
#    CUDAToolkit_ROOT) when there is one; else NVIDIA's toolkit wheels from PyPI into the same venv,
#    beside the CUDA libraries the torch wheel already put there (Debian has no CUDA 13).
toolkit_args=()
if [ -z "${CUDAToolkit_ROOT:-}" ] && ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  tk=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/nvidia/cu13
  # Keyed to the pinned list, so a machine whose venv has an older list's wheels gets the new ones.
  toolkit_done=$venv/.toolkit-complete-$(sha256sum "$root/scripts/requirements-toolkit.txt" | cut -c1-12)
  if [ ! -f "$toolkit_done" ]; then
    say "no CUDA toolkit on this machine: installing CUDA 13.0 toolkit wheels into $venv"
    "$venv/bin/pip" install --quiet --progress-bar off -r "$root/scripts/requirements-toolkit.txt"
    # The layout nvcc and CMake expect of a toolkit: lib64 and unversioned library names.
    ln -sfn lib "$tk/lib64"
    for so in libcudart.so.13 libnvrtc.so.13; do ln -sf "$so" "$tk/lib/${so%.13}"; done
    touch "$toolkit_done"
  fi
  toolkit_args=(-DCUDAToolkit_ROOT="$tk")
fi

# 4. Configure and build (ccache keeps rebuilds of fresh clones short: paths under the clone are
#    hashed relative to it, so a clone in another folder hits the same cache entries).
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
# An interrupted configure leaves a CMakeCache.txt and no build.ninja: configure again then too.
if [ ! -f "$build/build.ninja" ]; then
  say "configuring $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DGPUTRAIN_PYTHON="$root/.venv/bin/python" "${toolkit_args[@]}" \
        -DGPUTRAIN_WARNINGS_AS_ERRORS="${GPUTRAIN_WARNINGS_AS_ERRORS:-OFF}"
fi
say "building"
cmake --build "$build" -j "$jobs"

case "$job" in
  demo)
    say "gputrain verify --allow-cpu"
    "$build/bin/gputrain" verify --allow-cpu || exit $?
    say "gputrain quick-train --allow-cpu"
    "$build/bin/gputrain" quick-train --allow-cpu ;;
  test)
    say "running the test suite"
    cd "$build" && ctest --output-on-failure -j "$jobs" ;;
esac
