#!/usr/bin/env bash
# Fuzzes gputrain's readers with libFuzzer, ASan and UBSan (tests/fuzz, docs/fuzzing.md):
#   scripts/fuzz.sh build                  the fuzz build (clang) in build-fuzz/, over a GCC build
#   scripts/fuzz.sh run TARGET [SECONDS]   fuzz one target (default 300 s)
#   scripts/fuzz.sh all [SECONDS]          fuzz every target in turn for SECONDS each (default 60)
#   scripts/fuzz.sh replay [TARGET...]     run the committed corpora and regressions under the sanitizers
#   scripts/fuzz.sh ci [RUNS]              replay, then RUNS inputs (default 500) of each target from
#                                          a fixed seed: .ci/run's sanitizer pass
#   scripts/fuzz.sh list                   the targets
# A crash is saved as build-fuzz/crashes/TARGET/crash-*; commit it to tests/fuzz/regressions/TARGET/
# once fixed, so every build replays it. New inputs libFuzzer finds stay in build-fuzz/corpus/.
# Environment: GPUTRAIN_BUILD_DIR (the GCC build to link, default ./build), GPUTRAIN_FUZZ_DIR
# (default ./build-fuzz), GPUTRAIN_JOBS.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GPUTRAIN_BUILD_DIR:-$root/build}
fuzz=${GPUTRAIN_FUZZ_DIR:-$root/build-fuzz}
jobs=${GPUTRAIN_JOBS:-$(nproc)}
say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
targets() { for f in "$root"/tests/fuzz/targets/*.cpp; do basename "$f" .cpp; done; }

# LeakSanitizer stays on: a reader that leaks per input is a finding. LibTorch is not instrumented,
# so ASan cannot see its allocations' bounds, only ours.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_stack_use_after_return=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/fuzz/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

build_fuzz() {
  command -v clang++-14 >/dev/null || {
    echo "error: clang++-14 is not installed" >&2
    echo "fix: apt-get install clang-14 libclang-rt-14-dev" >&2
    exit 3
  }
  if [ ! -f "$build/lib/libgputrain_core.so" ]; then
    say "no GCC build in $build: building one first"
    GPUTRAIN_BUILD_DIR=$build "$root/scripts/bootstrap.sh" build
  fi
  if [ ! -f "$fuzz/build.ninja" ]; then
    # The GCC build's own Python (the torch wheel) and CUDA toolkit, so both builds see one LibTorch.
    cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
    local toolkit; toolkit=$(cached CUDAToolkit_ROOT)
    say "configuring $fuzz"
    CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true cmake -S "$root/tests/fuzz/libfuzzer" -B "$fuzz" -G Ninja \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DGPUTRAIN_BUILD="$build" -DGPUTRAIN_PYTHON="$(cached GPUTRAIN_PYTHON)" \
      ${toolkit:+-DCUDAToolkit_ROOT="$toolkit"}
  fi
  say "building the fuzz targets"
  CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true cmake --build "$fuzz" -j "$jobs"
}

# Fuzzes one target for $2 seconds from its committed corpus plus what earlier runs found (in $3,
# default build-fuzz/corpus/TARGET); returns non-zero when it found a crash.
run_target() {
  local target=$1 seconds=$2
  [ -x "$fuzz/fuzz_$target" ] || { echo "error: no fuzz target '$target' (scripts/fuzz.sh list)" >&2; exit 2; }
  local work=${3:-$fuzz/corpus/$target} crashes=$fuzz/crashes/$target/
  mkdir -p "$work" "$crashes"
  say "fuzzing $target for $seconds s"
  local inputs=("$work" "$root/tests/fuzz/corpus/$target")
  [ -d "$root/tests/fuzz/regressions/$target" ] && inputs+=("$root/tests/fuzz/regressions/$target")
  # 2 GB of memory at most, as for libFuzzer's default, and no single allocation past it: a reader
  # must refuse a 100-byte file that claims a 1 TB array before allocating it.
  local status=0
  TMPDIR=$fuzz/tmp "$fuzz/fuzz_$target" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -timeout=20 -artifact_prefix="$crashes" -print_final_stats=1 "${inputs[@]}" >"$fuzz/$target.log" 2>&1 || status=$?
  grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::number_of_executed_units|==[0-9]+==ERROR|fuzz: |SUMMARY|artifact_prefix.*Test unit written)' \
    "$fuzz/$target.log" || true
  return $status
}

# CI's pass: every corpus and regression under ASan and UBSan, then RUNS inputs of each target
# mutated from its corpus with a fixed seed (fuzzing proper is `all`). The seed fixes the
# mutations, but some inputs' coverage depends on addresses, so the inputs are the same each run
# only without address-space randomisation (setarch -R, where the machine allows it). New inputs go
# to a scratch folder, the committed corpora stay as they are; a finding is kept in
# build-fuzz/ci-findings/TARGET/ and, when small, printed in base64 so that a CI log can reproduce it.
ci() {
  local runs=$1 target passed=0 failed=0 same_addresses=()
  replay $(targets) || failed=$((failed + 1))
  if setarch "$(uname -m)" -R true 2>/dev/null; then
    same_addresses=(setarch "$(uname -m)" -R)
  else
    say "setarch -R is not allowed here: the inputs may differ from run to run"
  fi
  local scratch; scratch=$(mktemp -d)
  for target in $(targets); do
    say "fuzzing $target: $runs inputs, seed 1"
    rm -rf "$fuzz/ci-findings/$target"
    mkdir -p "$scratch/$target" "$fuzz/ci-findings/$target"
    if "${same_addresses[@]}" env TMPDIR="$fuzz/tmp" "$fuzz/fuzz_$target" -seed=1 -runs="$runs" -rss_limit_mb=2048 \
      -malloc_limit_mb=2048 -timeout=20 -artifact_prefix="$fuzz/ci-findings/$target/" "$scratch/$target" \
      "$root/tests/fuzz/corpus/$target" >"$fuzz/$target.ci.log" 2>&1; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      tail -40 "$fuzz/$target.ci.log" >&2
      show_findings "$target"
    fi
  done
  rm -rf "$scratch"
  echo "fuzz: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

# Each input a failed CI pass kept for TARGET, with its base64 when under 16 kB.
show_findings() {
  local input
  for input in "$fuzz/ci-findings/$1"/*; do
    [ -f "$input" ] || continue
    echo "kept: $input ($(stat -c %s "$input") bytes); scripts/fuzz.sh replay runs it once it is in tests/fuzz/regressions/$1/" >&2
    if [ "$(stat -c %s "$input")" -lt 16384 ]; then
      echo "its bytes, base64 (base64 -d > input):" >&2
      base64 -w 100 "$input" >&2
    fi
  done
}

replay() {
  local target status=0
  for target in "$@"; do
    local inputs=("$root/tests/fuzz/corpus/$target")
    [ -d "$root/tests/fuzz/regressions/$target" ] && inputs+=("$root/tests/fuzz/regressions/$target")
    say "replaying $target's corpus under ASan and UBSan"
    mkdir -p "$fuzz/tmp"
    TMPDIR=$fuzz/tmp "$fuzz/fuzz_$target" -runs=0 -rss_limit_mb=2048 -malloc_limit_mb=2048 "${inputs[@]}" >"$fuzz/$target.replay.log" 2>&1 ||
      { status=1; tail -30 "$fuzz/$target.replay.log" >&2; }
  done
  return $status
}

job=${1:-}
case "$job" in
  build) build_fuzz ;;
  list) targets ;;
  run) [ $# -ge 2 ] || usage; build_fuzz; mkdir -p "$fuzz/tmp"; run_target "$2" "${3:-300}" ;;
  all) build_fuzz; mkdir -p "$fuzz/tmp"; for t in $(targets); do run_target "$t" "${2:-60}" || true; done ;;
  ci) build_fuzz; mkdir -p "$fuzz/tmp"; ci "${2:-500}" ;;
  replay) build_fuzz; shift; if [ $# -gt 0 ]; then replay "$@"; else replay $(targets); fi ;;
  *) usage ;;
esac
