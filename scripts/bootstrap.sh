#!/usr/bin/env bash
# Installs what is missing, builds gputrain, then runs one job:
#   scripts/bootstrap.sh demo    build, then `gputrain verify --allow-cpu` (no files or GPU needed)
#   scripts/bootstrap.sh test    build, then the whole test suite (ctest)
#   scripts/bootstrap.sh build   build only
# Idempotent: a second run downloads nothing and takes seconds.
# Environment: GPUTRAIN_CACHE (default ~/.cache/gputrain) holds the Python environment with the
# torch wheel, shared by every clone; GPUTRAIN_BUILD_DIR (default ./build); GPUTRAIN_JOBS.
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
          libgtest-dev libgmock-dev)
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

# 2. CUDA toolkit 13 (headers and nvcc). Debian's archive has no CUDA 13, so it cannot be installed here.
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ] && [ -z "${CUDAToolkit_ROOT:-}" ]; then
  echo "error: CUDA toolkit 13 not found (no nvcc on PATH, no /usr/local/cuda)." >&2
  echo "  fix: install CUDA toolkit 13.0 from NVIDIA's repository, or set CUDAToolkit_ROOT=/path/to/cuda-13.0" >&2
  exit 3
fi
export PATH=$PATH:/usr/local/cuda/bin

# 3. LibTorch from the torch wheel, in a venv outside the clone (keyed by the requirements),
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

# 4. Configure and build (ccache keeps rebuilds of fresh clones short).
if [ ! -f "$build/CMakeCache.txt" ]; then
  say "configuring $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DGPUTRAIN_PYTHON="$root/.venv/bin/python"
fi
say "building"
cmake --build "$build" -j "$jobs"

case "$job" in
  demo)
    say "gputrain verify --allow-cpu"
    "$build/bin/gputrain" verify --allow-cpu ;;
  test)
    say "running the test suite"
    cd "$build" && ctest --output-on-failure -j "$jobs" ;;
esac
