#!/usr/bin/env bash
# On the GPU machine (see docs/benchmarks.md): build with the carried Debian packages, run the
# whole test suite (GPU tests included), verify at both levels, and the benchmarks. Logs go to $OUT.
#   here:  scripts/pack-device-deps.sh
#   there: device run, carry [".device-deps"], command "bash scripts/device-run.sh [quick|full]"
set -uo pipefail
level=${1:-quick}
out=${OUT:-/tmp/gputrain-out}; mkdir -p "$out"
build=build-device
python=$(command -v python3)
deps=$PWD/.device-deps/usr
[ -d "$deps" ] || { echo "error: .device-deps missing; run scripts/pack-device-deps.sh here and carry it" >&2; exit 2; }
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
# libzip is found with pkg-config, whose .pc files name /usr: read them inside the carried tree.
export PKG_CONFIG_PATH=$deps/lib/x86_64-linux-gnu/pkgconfig PKG_CONFIG_SYSROOT_DIR=$PWD/.device-deps

{ nvidia-smi; uname -a; cat /etc/os-release; } > "$out/machine.txt" 2>&1
cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUTRAIN_PYTHON="$python" \
      -DCMAKE_PREFIX_PATH="$deps" -DGPUTRAIN_WARNINGS_AS_ERRORS=ON > "$out/configure.log" 2>&1 \
  && cmake --build $build -j "$(nproc)" > "$out/build.log" 2>&1 \
  || { tail -50 "$out/configure.log" "$out/build.log"; exit 1; }
echo "== build ok"

ctest --test-dir $build --output-on-failure -j 4 > "$out/ctest.log" 2>&1; echo "== ctest rc=$?"; tail -15 "$out/ctest.log"
ctest --test-dir $build -L gpu -V > "$out/ctest-gpu.log" 2>&1; echo "== ctest -L gpu rc=$?"; grep -E "performance\.|Passed|Failed|Skipped" "$out/ctest-gpu.log" | head -40

$build/bin/gputrain --version | tee "$out/version.txt"
/usr/bin/time -f "verify quick wall %e s" $build/bin/gputrain verify --level quick --json --junit "$out/verify-junit.xml" \
  > "$out/verify-quick.json" 2> "$out/verify-quick.txt"; echo "== verify quick rc=$?"; cat "$out/verify-quick.txt"
"$python" bench/startup.py --build $build | tee "$out/bench-startup.md"
"$python" bench/verify_vs_pytorch.py --build $build --runs 3 | tee "$out/bench-verify.md"
/usr/bin/time -f "quick-train wall %e s" $build/bin/gputrain quick-train --json --junit "$out/quick-train-junit.xml" \
  > "$out/quick-train.json" 2> "$out/quick-train.txt"; echo "== quick-train rc=$?"; cat "$out/quick-train.txt"
GPUTRAIN_BUILD=$build "$python" bench/train_vs_pytorch.py --runs 5 | tee "$out/bench-train.md"
GPUTRAIN_BUILD=$build "$python" bench/cache_vs_loader.py --runs 3 | tee "$out/bench-cache.md"
GPUTRAIN_BUILD=$build "$python" bench/ddp_scaling.py --gpu --runs 3 --steps 200 | tee "$out/bench-ddp-overhead.md"
if [ "$level" = full ]; then
  $build/bin/gputrain verify --level full > "$out/verify-full.txt" 2>&1; echo "== verify full rc=$?"; tail -30 "$out/verify-full.txt"
fi
