#!/usr/bin/env bash
# On the GPU machine (see docs/benchmarks.md): build with the carried Debian packages, then one
# stage per device call (each fits the tool's 10-minute limit). A call that finds the machine still
# warm (it is given back 30 s after a call) reuses the build folder; otherwise it builds anew, about
# 85 s on 16 cores. Logs and tables go to $OUT.
#   here:  scripts/pack-device-deps.sh
#   there: device run, carry [".device-deps"], command "bash scripts/device-run.sh STAGE"
# Stages:
#   test   build; GPU tests (ctest -L gpu); --version; verify; quick-train
#   bench  the GPU benchmarks: startup, verify vs PyTorch, train vs PyTorch, cache vs loader
#   bench2 DDP overhead, OOM recovery, batch_size auto vs the true largest, profile --step
#   batch  the auto-batch GPU test and profile --batch --exhaustive alone
#   probe  profile --batch alone (the search's probe steps, seconds)
#   lightning  batch_size auto vs Lightning's Tuner on the GPU (the image has lightning 2.6.6)
#   mlp-batch  the Lightning bench's search alone (configs/mlp.yaml under 128 and 512 MiB caps, each
#          probe's peak shown), then the GPU tests in what is left of the stage's time
#   search the MLP's search under 128 MiB and batch_size auto vs Lightning's Tuner (2 runs): the
#          commands alone are built, no tests, for a call on what is left of a device budget
#   open   the figures issues #4 and #5 named, measured: the auto-batch and data GPU tests, the MLP's
#          search under 128 MiB, batch_size auto vs Lightning's Tuner, cache vs loader (stall, the
#          gather kernel's bandwidth against the copy and PyTorch's index_select), ResNet's search
#          against the true largest
#   graphs the CUDA-graph step (train.cuda_graphs): its GPU tests, profile --step with graphs on and off,
#          ResNet-18 batch 256 against PyTorch eager and torch.compile (default, reduce-overhead)
#   graphs2 the rest of its figures: ResNet-18 batch 1024, configs/mlp.yaml's MLP, the transformer in bf16
#   figures every GPU test, then where a ResNet-18 step's GPU time goes against PyTorch eager and
#          reduce-overhead (bench/kernel_breakdown.py), activation checkpointing's figure (ResNet-50 bf16
#          under 4 GiB), ResNet-18 batch 1024 against eager, in what is left of the stage
#   recheck the GpuGraphs tests and the auto-batch one alone (what a change to graph_step.cpp moves),
#          built alone: fits the last few minutes of a device budget
#   batchnorm  gputrain's batch-norm kernels: their GPU tests and the graph tests, the kernel
#          breakdown with them, with ATen's and with autocast's weight casts per layer, ResNet-18
#          batch 256 against PyTorch
#   monitoring  issue #51's monitoring overhead on the GPU (no MLflow: no libcurl on the machine)
#   ddpgraphs   distributed steps with their NCCL all-reduces inside the CUDA graph: the GpuDist and
#          GpuGraphs tests, then the DDP path at world size 1 with graphs on and off against a plain run
#   next   what no GPU has checked yet, most telling first, in one call: the GpuDist, GpuGraphs,
#          GpuBatchNorm, GpuProfile, GpuData (the chunked upload) and auto-batch tests, verify's
#          functional checks (the batch-norm kernels' among them), ResNet-18 batch 256 against
#          reduce-overhead (and with autocast's casts per layer; the set-up's phases, the CUDA
#          start-up floor and each capture's parts beside it), its profile --step (GPU busy from
#          CUPTI), the kernel breakdown (batch norm's and the optimizer's kernels one by one,
#          launches per step), then the rest stage's figures if time is left; if a GpuBatchNorm
#          test fails, the benchmarks run with GPUTRAIN_BATCH_NORM=aten and say so
#   retest the GPU tests a change after next's failures touches (batch-norm mask, busy share, the
#          distributed capture, the auto batch with captured probes), then monitoring (each part
#          alone too) and the DDP path with graphs on and off
#   rest   ResNet-18 batch 1024 against eager (no compile), issue #51's monitoring overhead on the
#          GPU, the DDP path with graphs on and off: next's tail, for a second call on a warm machine
#   full   verify --level full (burn-in included)
#   suite  the whole CPU suite with a GPU present (4 tests at a time: each uses several cores)
# The tool brings back at most 8 files: logs go into $OUT/logs.tgz, refreshed after every step.
set -uo pipefail
stage=${1:-test}
stages="test|bench|bench2|batch|probe|lightning|mlp-batch|search|open|graphs|graphs2|figures|recheck|batchnorm|monitoring|ddpgraphs|next|rest|retest|full|suite"
case "|$stages|" in *"|$stage|"*) ;; *) [ "$stage" = quick ] && stage=test || { echo "usage: $0 $stages" >&2; exit 2; } ;; esac
results=${OUT:-/tmp/gputrain-out}; out=/tmp/gputrain-logs; mkdir -p "$results" "$out"
build=build-device
python=$(command -v python3)
deps=$PWD/.device-deps/usr
[ -d "$deps" ] || { echo "error: .device-deps missing; run scripts/pack-device-deps.sh here and carry it" >&2; exit 2; }
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
# libzip is found with pkg-config, whose .pc files name /usr: read them inside the carried tree.
export PKG_CONFIG_PATH=$deps/lib/x86_64-linux-gnu/pkgconfig PKG_CONFIG_SYSROOT_DIR=$PWD/.device-deps
pack() { tar czf "$results/logs.tgz" -C "$out" .; }
step() { pack; echo "== $* ($(date +%T))"; }

{ nvidia-smi; uname -a; cat /etc/os-release; } > "$out/machine.txt" 2>&1
# zlib1g-dev's libz.so links to the runtime library outside the package: use the machine's own
# libz.so.1 (the static libz.a beside it is not position-independent and cannot go into our .so).
zlib=; for z in /usr/lib/x86_64-linux-gnu/libz.so.1 /lib/x86_64-linux-gnu/libz.so.1; do [ -e $z ] && { zlib="-DZLIB_LIBRARY=$z -DZLIB_LIBRARY_RELEASE=$z"; break; }; done
# The carried libjpeg62-turbo-dev's jconfig.h sits in a multiarch folder the compiler does not
# search before the machine's own: where the machine has libjpeg headers, take its library too,
# so header and library agree (a mismatch fails every decode with "Wrong JPEG library version").
jpeg=; lib=/usr/lib/x86_64-linux-gnu/libjpeg.so
[ -e /usr/include/jpeglib.h ] && [ -e $lib ] && jpeg="-DJPEG_INCLUDE_DIR=/usr/include -DJPEG_LIBRARY=$lib -DJPEG_LIBRARY_RELEASE=$lib"
echo "zlib: ${zlib:-carried}; jpeg: ${jpeg:-carried}"
step build
# The measuring stages need the commands and the GPU tests only: a third fewer files to compile
# than the whole tree (the CPU tests are the rest), which a 15-minute device budget feels.
targets=()
case "$stage" in
open|probe|lightning|mlp-batch)
  targets=(--target gputrain gputrain-verify gputrain-profile gputrain-train gputrain-quick-train test_gpu_train test_gpu_checks) ;;
search|graphs2) targets=(--target gputrain gputrain-profile gputrain-train) ;;
graphs) targets=(--target gputrain gputrain-profile gputrain-train test_gpu_train) ;;
batchnorm) targets=(--target gputrain gputrain-profile gputrain-train test_gpu_train) ;;
monitoring) targets=(--target gputrain gputrain-train) ;;
ddpgraphs) targets=(--target gputrain gputrain-train test_gpu_train) ;;
rest) targets=(--target gputrain gputrain-profile gputrain-train) ;;
retest) targets=(--target gputrain gputrain-train gputrain-profile test_gpu_train test_gpu_checks) ;;
next) targets=(--target gputrain gputrain-verify gputrain-profile gputrain-train test_gpu_train test_gpu_checks) ;;
figures) targets=(--target gputrain gputrain-verify gputrain-profile gputrain-train test_gpu_train test_gpu_checks) ;;
recheck) targets=(--target test_gpu_train) ;;
esac
configure() {
  cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUTRAIN_PYTHON="$python" \
        -DCMAKE_PREFIX_PATH="$deps" -DGPUTRAIN_WARNINGS_AS_ERRORS=$1 $zlib $jpeg > "$out/configure.log" 2>&1 \
    && cmake --build $build -j "$(nproc)" "${targets[@]}" -- -k 0 > "$out/build.log" 2>&1
}
# This machine's compiler is newer than the CI's: a warning only it gives is reported here, but the
# build does not fail on it (a second build with warnings as errors off cost 2 of a call's minutes).
configure OFF || { tail -n 50 "$out/configure.log" "$out/build.log"; pack; exit 1; }
if grep -qE "warning:" "$out/build.log"; then
  echo "== warnings this machine's compiler gives (CI builds with warnings as errors):"
  grep -E "warning:" "$out/build.log" | sort | uniq -c | head -20 | tee "$out/warnings.txt"
fi

# Every stage ends within the device tool's 10-minute limit (GPUTRAIN_STAGE_SECONDS, from this
# script's start, build included): a benchmark gets its own limit or what is left, whichever is
# less, and is skipped, saying so, when under 30 s are left.
stage_seconds=${GPUTRAIN_STAGE_SECONDS:-570}
run_bench() {
  local name=$1 limit=$2 left=$((stage_seconds - SECONDS)); shift 2
  if [ "$left" -lt 30 ]; then echo "== $name skipped: ${left} s left of the stage's ${stage_seconds} s"; return; fi
  [ "$limit" -gt "$left" ] && limit=$left
  step "$name (at most ${limit} s)"; timeout "$limit" "$@" | tee "$results/bench-$name.md"
}

# batch_size: auto on the GPU against the true largest batch (bisection with real steps), and
# the memory model behind it.
run_auto_batch() {
  run_bench auto-batch 150 bash -c "$build/bin/gputrain profile --batch --exhaustive configs/resnet18-cifar.yaml \
      --set data.samples=8192 --set train.precision=bf16-mixed --max-memory 4GiB 2>&1; \
      $build/bin/gputrain profile --memory configs/resnet18-cifar.yaml --set data.samples=8192 \
      --set train.precision=bf16-mixed --max-memory 4GiB 2>&1"
}

# The MLP of bench/auto_batch_vs_lightning.py under the cap $1: its search, every probe shown,
# against the true largest, and the memory table.
run_mlp_batch() {
  local sets="configs/mlp.yaml --set data.samples=16384 --set data.val_samples=512 --set device=cuda --max-memory $1"
  run_bench "mlp-batch-$1" 40 bash -c "$build/bin/gputrain profile --batch --exhaustive $sets 2>&1; $build/bin/gputrain profile --memory $sets 2>&1"
}

# next's tail: the figures that move least with the batch-norm kernels, each cut to what is left.
run_rest() {
  GPUTRAIN_BUILD=$build run_bench train-1024 150 "$python" bench/train_vs_pytorch.py --runs 2 --cases resnet18_1024 --no-compile
  GPUTRAIN_BUILD=$build run_bench monitoring 150 "$python" bench/monitoring_overhead.py --device cuda --no-mlflow --parts --runs 3
  GPUTRAIN_BUILD=$build run_bench ddp-graphs 200 "$python" bench/ddp_scaling.py --gpu --runs "${GPUTRAIN_BENCH_RUNS:-2}" --steps 200
}

case "$stage" in
test)
  step "ctest -L gpu"
  ctest --test-dir $build -L gpu -V --timeout 240 > "$out/ctest-gpu.log" 2>&1; echo "rc=$?"
  grep -E "performance\.|Passed|Failed|Skipped|Not Run|resumed vs|largest [0-9]" "$out/ctest-gpu.log" | head -40
  $build/bin/gputrain --version | tee "$out/version.txt"
  step "verify quick"
  /usr/bin/time -f "verify quick wall %e s" $build/bin/gputrain verify --level quick --json --junit "$out/verify-junit.xml" \
    > "$out/verify-quick.json" 2> "$out/verify-quick.txt"; echo "rc=$?"; cat "$out/verify-quick.txt"
  step quick-train
  /usr/bin/time -f "quick-train wall %e s" $build/bin/gputrain quick-train --json --junit "$out/quick-train-junit.xml" \
    > "$out/quick-train.json" 2> "$out/quick-train.txt"; echo "rc=$?"; cat "$out/quick-train.txt"
  step "ctest: the tests that depend on this machine's libraries (images, profile, install)"
  # The installed package's consumer links against the carried libraries, outside ld's search path here.
  LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  ctest --test-dir $build --output-on-failure -j 4 -R "^(Images|ImageFolder|TrainerData|cli\.profile_loader|install)" \
    --timeout 120 > "$out/ctest-machine.log" 2>&1; echo "rc=$?"; tail -8 "$out/ctest-machine.log"
  ;;
suite)
  step "ctest (whole suite)"
  ctest --test-dir $build --output-on-failure -j 4 -LE gpu --timeout 300 > "$out/ctest.log" 2>&1; echo "rc=$?"; tail -25 "$out/ctest.log"
  ;;
bench)
  # Each benchmark under its own limit, so one that hangs cannot take the others' time.
  run_bench startup 60 "$python" bench/startup.py --build $build
  run_bench verify 120 "$python" bench/verify_vs_pytorch.py --build $build --runs 3
  GPUTRAIN_BUILD=$build run_bench train 220 "$python" bench/train_vs_pytorch.py --runs 3
  GPUTRAIN_BUILD=$build run_bench cache 120 "$python" bench/cache_vs_loader.py --runs 3
  ;;
bench2)
  GPUTRAIN_BUILD=$build run_bench ddp-overhead 120 "$python" bench/ddp_scaling.py --gpu --runs 7 --steps 200
  GPUTRAIN_BUILD=$build run_bench oom 120 "$python" bench/oom_recovery.py --runs 3
  run_auto_batch
  # --step's split of a real step, with NVML's utilisation.
  run_bench profile-step 90 bash -c "$build/bin/gputrain profile --step configs/resnet18-cifar.yaml 2>&1"
  ;;
batch)
  step "ctest auto batch"
  ctest --test-dir $build -R "GpuTrainer.AutoBatch" -V --timeout 240 > "$out/ctest-batch.log" 2>&1; echo "rc=$?"
  grep -E "Passed|Failed|largest [0-9]" "$out/ctest-batch.log"
  run_auto_batch
  LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu ctest --test-dir $build -R "^install" --output-on-failure > "$out/ctest-install.log" 2>&1
  echo "install test rc=$?"
  ;;
lightning)
  GPUTRAIN_BUILD=$build run_bench lightning 400 "$python" bench/auto_batch_vs_lightning.py --device cuda --cap-mib 128 --runs 3
  ;;
mlp-batch)
  run_mlp_batch 128MiB
  run_mlp_batch 512MiB
  step "ctest -L gpu"
  ctest --test-dir $build -L gpu --output-on-failure --timeout 60 --stop-time "$(date -d "+$((stage_seconds - SECONDS - 5)) seconds" +%T)" \
    > "$out/ctest-gpu.log" 2>&1; echo "rc=$?"
  grep -E "Passed|Failed|Not Run|tests passed" "$out/ctest-gpu.log"
  ;;
open)
  # The figures issues #4 and #5 named, the ones a change to the search or the gather moves first,
  # so a call cut short still brings them back: the auto-batch GPU test and the MLP's search under
  # 128 MiB, the data GPU tests (gputrain's own gather kernel), the Lightning comparison, cache vs
  # loader (the kernel's bandwidth against the copy and PyTorch's index_select), the kernel under
  # memcheck, ResNet's search against the true largest (~420 s on an H200 with the build).
  step "ctest GpuTrainer.AutoBatch, GpuData, GpuChecks.Functional"
  ctest --test-dir $build -R "^(GpuTrainer\.AutoBatch|GpuData|GpuChecks\.Functional)" -V --timeout 120 > "$out/ctest-open.log" 2>&1; echo "rc=$?"
  grep -E "Passed|Failed|Not Run|found [0-9]+, largest|probe step" "$out/ctest-open.log"
  run_mlp_batch 128MiB
  GPUTRAIN_BUILD=$build run_bench lightning 150 "$python" bench/auto_batch_vs_lightning.py --device cuda --cap-mib 128 --runs 3
  GPUTRAIN_BUILD=$build run_bench cache 150 "$python" bench/cache_vs_loader.py --runs 3
  # The gather kernel under compute-sanitizer's memcheck (it works on the Firecracker machines, not
  # on the gVisor ones): it only adds to what the tests showed.
  run_bench sanitizer 45 bash -c "compute-sanitizer --tool memcheck --error-exitcode 1 $build/bin/test_gpu_train \
      --gtest_filter='GpuData.TheGatherKernelMovesRowsOfEveryDtypeBitForBit:GpuData.ChunkedVramGathersMatchTheCpuBatchForBatch' 2>&1 | tail -20"
  # Last: ResNet's search runs into no OOM, so it is the one the batch search's change left alone.
  run_auto_batch
  ;;
search)
  run_mlp_batch 128MiB
  GPUTRAIN_BUILD=$build run_bench lightning 150 "$python" bench/auto_batch_vs_lightning.py --device cuda --cap-mib 128 --runs 2
  ;;
probe)
  run_bench probe 60 bash -c "$build/bin/gputrain profile --batch configs/resnet18-cifar.yaml --set data.samples=8192 \
      --set train.precision=bf16-mixed --max-memory 4GiB 2>&1"
  ;;
graphs)
  step "ctest GpuGraphs"
  ctest --test-dir $build -R "^GpuGraphs" -V --timeout 45 > "$out/ctest-graphs.log" 2>&1; echo "rc=$?"
  grep -E "Passed|Failed|Not Run|captured|cuda graphs|error|Error|Expected|Which is|differs" "$out/ctest-graphs.log" | head -40
  for graphs in on off; do
    run_bench "profile-step-graphs-$graphs" 60 bash -c "$build/bin/gputrain profile --step configs/resnet18-cifar.yaml \
        --set train.cuda_graphs=$graphs 2>&1"
  done
  GPUTRAIN_BUILD=$build run_bench train-graphs 300 "$python" bench/train_vs_pytorch.py --runs "${GPUTRAIN_BENCH_RUNS:-3}" --cases resnet18
  # graphs2's cases in what is left (each case's table is printed as it ends)
  GPUTRAIN_BUILD=$build run_bench train-graphs2 500 "$python" bench/train_vs_pytorch.py --runs "${GPUTRAIN_BENCH_RUNS:-3}" \
      --cases mlp_yaml,transformer_bf16,resnet18_1024
  ;;
graphs2)
  GPUTRAIN_BUILD=$build run_bench train-graphs2 500 "$python" bench/train_vs_pytorch.py --runs 3 \
      --cases resnet18_1024,mlp_yaml,transformer_bf16
  ;;
figures)
  step "ctest -L gpu"
  ctest --test-dir $build -L gpu -V --timeout 90 > "$out/ctest-gpu.log" 2>&1; echo "rc=$?"
  grep -E "^[0-9]+/[0-9]+ Test|tests passed|Failure|Expected|Which is|differs|error" "$out/ctest-gpu.log" | head -60
  GPUTRAIN_BUILD=$build run_bench kernels 150 "$python" bench/kernel_breakdown.py
  GPUTRAIN_BUILD=$build run_bench recompute 120 "$python" bench/activation_checkpointing.py --device cuda --max-memory 4GiB --runs 3
  GPUTRAIN_BUILD=$build run_bench train-1024 300 "$python" bench/train_vs_pytorch.py --runs 2 --cases resnet18_1024 --no-compile
  ;;
recheck)
  step "ctest GpuGraphs, GpuTrainer.AutoBatch"
  ctest --test-dir $build -R "^(GpuGraphs|GpuTrainer\.AutoBatch)" --output-on-failure --timeout 60 > "$out/ctest-recheck.log" 2>&1; echo "rc=$?"
  grep -E "Test +#|tests passed|Failure|Expected|Which is|differs" "$out/ctest-recheck.log" | head -40
  ;;
batchnorm)
  # gputrain's batch-norm kernels: against ATen in fp32, inside the graphs, where a step's kernel
  # time goes with them and with ATen's, and ResNet-18 batch 256 against PyTorch and torch.compile.
  step "ctest GpuBatchNorm, GpuGraphs"
  ctest --test-dir $build -R "^(GpuBatchNorm|GpuGraphs)" --output-on-failure --timeout 90 > "$out/ctest-bn.log" 2>&1; echo "rc=$?"
  grep -E "Test +#|tests passed|Failure|Expected|Which is|differs|largest difference|ran |Trace" "$out/ctest-bn.log" | head -60
  GPUTRAIN_BUILD=$build run_bench kernels 150 "$python" bench/kernel_breakdown.py
  GPUTRAIN_BUILD=$build run_bench train-resnet 330 "$python" bench/train_vs_pytorch.py --runs "${GPUTRAIN_BENCH_RUNS:-3}" --cases resnet18
  ;;
monitoring)
  # Issue #51's overhead on a GPU (configs/mlp.yaml: host-bound steps, where it shows most): the
  # gradient norm, system readings and alerts on vs off. Without MLflow: .device-deps carries no libcurl.
  GPUTRAIN_BUILD=$build run_bench monitoring 420 "$python" bench/monitoring_overhead.py --device cuda --no-mlflow --runs 7
  ;;
ddpgraphs)
  step "ctest GpuDist, GpuGraphs"
  ctest --test-dir $build -R "^(GpuDist|GpuGraphs)" --output-on-failure --timeout 120 > "$out/ctest-ddpgraphs.log" 2>&1; echo "rc=$?"
  grep -E "Test +#|tests passed|Failure|Expected|Which is|differs|max difference|error" "$out/ctest-ddpgraphs.log" | head -40
  GPUTRAIN_BUILD=$build run_bench ddp-graphs 300 "$python" bench/ddp_scaling.py --gpu --runs "${GPUTRAIN_BENCH_RUNS:-3}" --steps 200
  ;;
next)
  step "ctest GpuDist, GpuGraphs, GpuBatchNorm, GpuProfile, GpuData, GpuTrainer.AutoBatch"
  ctest --test-dir $build -R "^(GpuDist|GpuGraphs|GpuBatchNorm|GpuProfile|GpuData|GpuTrainer\.AutoBatch)" --output-on-failure --timeout 120 \
    > "$out/ctest-next.log" 2>&1; echo "rc=$?"
  grep -E "Test +#|tests passed|Failure|Expected|Which is|differs|max difference|error" "$out/ctest-next.log" | head -50
  # Kernels first run here: if ours fail, the figures below are still worth having, with ATen's.
  if grep -qE "GpuBatchNorm\..*\*\*\*Failed" "$out/ctest-next.log"; then
    echo "== GpuBatchNorm failed: the benchmarks below run with GPUTRAIN_BATCH_NORM=aten"
    export GPUTRAIN_BATCH_NORM=aten
  fi
  run_bench verify 60 bash -c "$build/bin/gputrain verify 2>&1 | grep -E 'functional|verify:'"
  GPUTRAIN_BUILD=$build run_bench train-resnet 200 "$python" bench/train_vs_pytorch.py --runs "${GPUTRAIN_BENCH_RUNS:-2}" --cases resnet18
  # The GPU busy share from CUPTI's kernel times (issue #48: >= 90 % with graphs).
  run_bench profile-step-busy 60 bash -c "$build/bin/gputrain profile --step configs/resnet18-cifar.yaml 2>&1"
  # Each side's line comes as it ends (graphs on, off, reduce-overhead first): a cut run keeps them.
  GPUTRAIN_BUILD=$build run_bench kernels 200 "$python" bench/kernel_breakdown.py
  run_rest
  ;;
rest)
  run_rest
  ;;
retest)
  step "ctest GpuBatchNorm, GpuProfile, GpuDist, GpuGraphs, GpuTrainer.AutoBatch"
  ctest --test-dir $build -R "^(GpuBatchNorm|GpuProfile|GpuDist|GpuGraphs|GpuTrainer\.AutoBatch|gpu\.tensorboard)" -V --timeout 150 \
    > "$out/ctest-retest.log" 2>&1; echo "rc=$?"
  grep -E "Test +#|tests passed|Failure|Expected|Which is|differs|max difference|error|found [0-9]+, largest" "$out/ctest-retest.log" | head -50
  GPUTRAIN_BUILD=$build run_bench monitoring 100 "$python" bench/monitoring_overhead.py --device cuda --no-mlflow --parts --runs 3
  GPUTRAIN_BUILD=$build run_bench ddp-graphs 120 "$python" bench/ddp_scaling.py --gpu --runs 2 --steps 200
  ;;
full)
  step "verify full"
  $build/bin/gputrain verify --level full > "$out/verify-full.txt" 2>&1; echo "rc=$?"; tail -30 "$out/verify-full.txt"
  ;;
esac
step done
pack
