#!/usr/bin/env python3
"""gputrain train vs the same training loop in PyTorch, side by side in one run.

Both sides train the same model (same initial weights: Python writes them, gputrain loads them
with model.init_weights), on the same synthetic data (rebuilt here exactly as gputrain makes it),
in the same shuffled order, with the same batch and optimizer, data already in memory. Throughput
is samples/s over timed windows of steps after a warm-up window; each side runs --runs times,
interleaved, and the figure is the ratio of the medians, with the runs' spread beside it.
The sides: gputrain with its defaults (train.cuda_graphs: auto, channels_last: auto) and, on a GPU,
with cuda_graphs off; PyTorch eager as usually written (NCHW, foreach SGD) and as the strongest
eager loop (fused SGD, channels_last for convolutions); on a GPU (or with --compile) that loop under
torch.compile in default and "reduce-overhead" (CUDA graphs) modes. Compilation and capture stay
out of the samples/s (the first window is left out) and show in "to the first window's end" (the
median, and the first run's apart: torch.compile's later runs read Inductor's on-disk cache):
seconds from the start (gputrain: the command's start, process and data included; PyTorch: its
loop's start) to the end of the first window of steps.
The loss check trains both in fp32 and compares the training loss after each of N steps (goal:
within 1e-4), then again with the PyTorch loop on torch.optim.SGD(fused=True) with the rate as a
float32 tensor, the kernel and rate gputrain steps with (expected: 0.0).

Usage: bench/train_vs_pytorch.py [--device cpu|cuda] [--runs 5] [--cases mlp,cnn,transformer]
       bench/train_vs_pytorch.py --check   (every case, one step of batch 2 each, on the CPU: for the test suite)
Cases: mlp (batch 256), mlp_yaml (configs/mlp.yaml's: LayerNorm and dropout 0.1), cnn (small CNN, batch 128), resnet18 (bf16-mixed, batch 256; GPU),
resnet18_1024 (the same at batch 1024; GPU), transformer (configs/transformer.yaml's: 32 positions,
batch 128), transformer_bf16 (the same in bf16-mixed; GPU), transformer512 (512 positions,
bf16-mixed, batch 64; GPU).
"""
import argparse
import contextlib
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

import cuda_floor  # bench/ (the script's folder is on the path)
from peer_models import SEED, Transformer, epoch_order, mlp, resnet18, small_cnn, synthetic

try:
    from safetensors.torch import save_file
except ImportError:  # the GPU machine has no network to install it: the format is simple enough
    def save_file(tensors, path):
        names = {torch.float32: "F32", torch.int64: "I64"}
        header, offset, blobs = {}, 0, []
        for name, t in tensors.items():
            data = t.contiguous().numpy().tobytes()
            header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
            offset += len(data)
            blobs.append(data)
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        with open(path, "wb") as f:
            f.write(len(text).to_bytes(8, "little") + text + b"".join(blobs))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPUTRAIN = os.path.join(ROOT, os.environ.get("GPUTRAIN_BUILD", "build"), "bin", "gputrain")

CASES = {
    # name: model settings, sample shape, classes, batch, precision, steps per window
    "mlp": dict(model=["model.name=mlp", "model.hidden=[512, 256]"], shape=[256], classes=10, batch=256,
                precision="fp32", window=20),
    # configs/mlp.yaml's model: LayerNorm and dropout 0.1 after each hidden layer
    "mlp_yaml": dict(model=["model.name=mlp", "model.hidden=[512, 256]", "model.norm=layer", "model.dropout=0.1"],
                     shape=[256], classes=10, batch=256, precision="fp32", window=20),
    "cnn": dict(model=["model.name=small_cnn", "model.width=32"], shape=[3, 32, 32], classes=10, batch=128,
                precision="fp32", window=5),
    "resnet18": dict(model=["model.name=resnet18", "model.stem=cifar"], shape=[3, 32, 32], classes=10, batch=256,
                     precision="bf16-mixed", window=20),
    "resnet18_1024": dict(model=["model.name=resnet18", "model.stem=cifar"], shape=[3, 32, 32], classes=10, batch=1024,
                          precision="bf16-mixed", window=10),
    # configs/transformer.yaml's model and data: 2 post-norm layers, width 128, 4 heads, dropout 0.1
    "transformer": dict(model=["model.name=transformer", "model.layers=2", "model.d_model=128", "model.heads=4",
                               "model.ff_dim=256", "model.dropout=0.1"], shape=[32, 16], classes=4, batch=128,
                        precision="fp32", window=10),
    "transformer_bf16": dict(model=["model.name=transformer", "model.layers=2", "model.d_model=128", "model.heads=4",
                                    "model.ff_dim=256", "model.dropout=0.1"], shape=[32, 16], classes=4, batch=128,
                             precision="bf16-mixed", window=10),
    # long sequences, where fused attention matters: 512 positions, width 256, 8 heads (GPU)
    "transformer512": dict(model=["model.name=transformer", "model.layers=4", "model.d_model=256", "model.heads=8",
                                  "model.ff_dim=1024", "model.dropout=0.1"], shape=[512, 32], classes=4, batch=64,
                           precision="bf16-mixed", window=10),
}


def build(case):
    c = CASES[case]
    if case == "mlp":
        return mlp(c["shape"][0], [512, 256], c["classes"])
    if case == "mlp_yaml":
        return mlp(c["shape"][0], [512, 256], c["classes"], norm=True, dropout=0.1)
    if case == "cnn":
        return small_cnn(c["shape"][0], 32, c["classes"])
    if case.startswith("transformer"):
        get = lambda key: float(next(m.split("=")[1] for m in c["model"] if m.startswith("model." + key + "=")))
        return Transformer(c["shape"], int(get("d_model")), int(get("heads")), int(get("ff_dim")), int(get("layers")),
                           get("dropout"), c["classes"])
    return resnet18(c["classes"])


# ---- the two sides ----

def pytorch_run(case, device, steps, init, lr, data, channels_last=False, fused_sgd=None, compile_mode=None, tensor_lr=False):
    """The PyTorch loop: eager, or the step under torch.compile (`compile_mode`: "default" or
    "reduce-overhead", CUDA graphs). Returns samples/s per window, the windows' losses, and the
    seconds until the first window's steps were done (compilation included)."""
    c = CASES[case]
    torch.manual_seed(SEED)
    model = build(case)
    model.load_state_dict(init)
    model.to(device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    # tensor_lr: the rate as a float32 tensor, as gputrain keeps it for its capturable step
    rate = torch.tensor(lr, dtype=torch.float32, device=device) if tensor_lr else lr
    optimizer = torch.optim.SGD(model.parameters(), lr=rate, momentum=0.9, fused=fused_sgd)
    x_all, y_all = data[0].to(device), data[1].to(device)
    n, batch = x_all.shape[0], c["batch"]
    amp = c["precision"] == "bf16-mixed"

    def train_step(x, y):
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=amp):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach().float()

    step_fn = torch.compile(train_step, mode=compile_mode) if compile_mode else train_step
    losses, windows, first_window_seconds = [], [], None
    started = time.perf_counter()
    step, epoch, window_start, window_loss = 0, 0, started, torch.zeros((), device=device)
    while step < steps:
        order = epoch_order(n, epoch).to(device)
        for pos in range(0, n, batch):
            idx = order[pos:pos + batch]
            x, y = x_all.index_select(0, idx), y_all.index_select(0, idx)
            if channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            if compile_mode == "reduce-overhead":
                torch.compiler.cudagraph_mark_step_begin()  # the last step's outputs are read already
            window_loss += step_fn(x, y)
            step += 1
            if step % c["window"] == 0:
                losses.append(window_loss.item() / c["window"])  # syncs, as gputrain's report does
                window_loss.zero_()
                now = time.perf_counter()
                windows.append(c["window"] * batch / (now - window_start))
                window_start = now
                if first_window_seconds is None:
                    first_window_seconds = now - started
            if step == steps:
                break
        epoch += 1
    return windows, losses, first_window_seconds


# Per case, per gputrain run: seconds from the command's start to its start record (written as the
# first step begins) and to the first step's record (its end: cuDNN's algorithm search included),
# the trainer's set-up among them, and the data's opening among those.
STARTUP = {}
SETUP_PHASES = {}  # case: {phase: [seconds per run]}, the start record's setup_phases
CAPTURES = {}  # (case, side): [seconds of each run's captures], from training.log's "is captured (X s: ...)"
CAPTURE_PARTS = {}  # (case, side): [[settling, recording, instantiating, first replay] of each capture]


def gputrain_run(case, device, steps, init_path, lr, workdir, every=None, front=None, graphs="auto", env=None):
    """gputrain train on the case: samples/s and loss per step line, and the seconds from the
    command's start to the end of its first window of steps (start-up, data, warm-up and capture
    included)."""
    c = CASES[case]
    run_dir = os.path.join(workdir, "gputrain-" + case)
    shutil.rmtree(run_dir, ignore_errors=True)  # metrics.jsonl appends across runs
    samples = c["batch"] * steps
    args = [front or GPUTRAIN, "train", "--set", "logging.dir=" + run_dir, "--set", "checkpoint.resume=never",
            "--set", "checkpoint.every_epochs=0", "--set", "checkpoint.best_metric=none", "--set", "logging.progress=off",
            "--set", "logging.tensorboard=false", "--set", "data.val_samples=0", "--set", "data.samples=%d" % samples,
            "--set", "data.shape=%s" % json.dumps(c["shape"]), "--set", "data.classes=%d" % c["classes"],
            "--set", "train.batch_size=%d" % c["batch"], "--set", "train.max_steps=%d" % steps, "--set", "train.epochs=1",
            "--set", "train.precision=" + c["precision"], "--set", "train.seed=%d" % SEED,
            "--set", "optimizer.name=sgd", "--set", "optimizer.lr=%r" % lr, "--set", "optimizer.momentum=0.9",
            "--set", "model.init_weights=" + init_path, "--set", "device=" + str(device),
            "--set", "train.cuda_graphs=" + graphs,
            "--set", "logging.every_steps=%d" % (every or c["window"])] + sum((["--set", m] for m in c["model"]), [])
    if front:  # another build may predate the key: its "--set" goes with it
        args = [a for i, a in enumerate(args)
                if not (a.startswith("train.cuda_graphs=") or (a == "--set" and i + 1 < len(args) and args[i + 1].startswith("train.cuda_graphs=")))]
    started = time.time()
    result = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    if result.returncode != 0:
        sys.exit("gputrain failed:\n" + result.stderr)
    records = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl"))]
    start = next((r for r in records if r["kind"] == "start"), {})
    lines = [r for r in records if r["kind"] == "step"]
    first_step = next((r["time"] - started for r in lines if r["step"] == 1 and "time" in r), float("nan"))
    if "setup_seconds" in start:  # builds before 2026-11-29 lack it
        STARTUP.setdefault(case, []).append((start["time"] - started, first_step, start["setup_seconds"], start["data_read_seconds"],
                                            start.get("data_load_seconds") or 0.0))
        for phase, seconds in start.get("setup_phases", {}).items():  # builds before 2026-11-30 lack them
            SETUP_PHASES.setdefault(case, {}).setdefault(phase, []).append(seconds)
    with open(os.path.join(run_dir, "training.log")) as f:
        log = f.read()
        captured = [float(s) for s in re.findall(r"is captured \(([0-9.]+) s[:)]", log)]
        parts = re.findall(r"is captured \([0-9.]+ s: ([0-9.]+) s settling, ([0-9.]+) s recording, ([0-9.]+) s instantiating, "
                           r"([0-9.]+) s the first replay\)", log)
    if captured:
        side = "graphs " + graphs + "".join(", %s=%s" % kv for kv in sorted((env or {}).items()))
        CAPTURES.setdefault((case, side), []).append(captured)
        for part in parts:
            CAPTURE_PARTS.setdefault((case, side), []).append([float(x) for x in part])
    first = [r for r in lines if r["step"] == (every or c["window"])]
    first_window_seconds = first[0]["time"] - started if first and "time" in first[0] else None
    return [l["samples_per_second"] for l in lines], [l["loss"] for l in lines], first_window_seconds


@contextlib.contextmanager
def case_changed(case, **changes):
    """CASES[case] with some entries replaced inside the block (both sides read the case by name)."""
    c = CASES[case]
    saved = {key: c[key] for key in changes}
    c.update(changes)
    try:
        yield c
    finally:
        c.update(saved)


def initial_weights(case, workdir, tag, seed=None):
    """A fresh model's weights, as a dict for the PyTorch loop and as the .safetensors file that
    gputrain starts from (model.init_weights); drawn from `seed` when one is given."""
    if seed is not None:
        torch.manual_seed(seed)
    init = {k: v.contiguous() for k, v in build(case).state_dict().items()}
    path = os.path.join(workdir, "%s-%s.safetensors" % (case, tag))
    save_file(init, path)
    return init, path


def largest_gap(ours, theirs):
    return max(abs(a - b) for a, b in zip(ours, theirs))


def per_step_losses(case, workdir, steps, peers=({},), lr=0.05, seed=0):
    """The training loss after each of `steps` fp32 SGD steps on the CPU, from the same weights
    (drawn from `seed`) on the same batches: gputrain's, and the PyTorch loop's once per entry of
    `peers` (its extra arguments)."""
    cpu = torch.device("cpu")
    with case_changed(case, window=1) as c:  # one loss per step on both sides
        init, init_path = initial_weights(case, workdir, "parity", seed)
        data = synthetic(c["shape"], c["classes"], c["batch"] * steps, 0)
        _, ours, _ = gputrain_run(case, cpu, steps, init_path, lr, workdir, every=1)
        theirs = [pytorch_run(case, cpu, steps, init, lr, data, **peer)[1] for peer in peers]
    return ours, theirs


# Dense bf16 tensor-core peaks from NVIDIA's datasheets (TFLOPS, without sparsity), by the name
# torch reports: how far the achieved figure is from what the chip can do.
BF16_PEAK_TFLOPS = {"H100 80GB HBM3": 989.0, "H100 PCIe": 756.0, "H200": 989.0, "A100": 312.0}


def training_flops_per_sample(case):
    """Forward and backward FLOPs of one training sample (matmuls and convolutions, as
    torch.utils.flop_counter counts them), from one fp32 CPU step at the case's batch."""
    from torch.utils.flop_counter import FlopCounterMode
    c = CASES[case]
    model = build(case)
    batch = min(c["batch"], 16)
    x, y = synthetic(c["shape"], c["classes"], batch, 0)
    with FlopCounterMode(display=False) as counter:
        F.cross_entropy(model(x), y).backward()
    return counter.get_total_flops() / batch


def peak_of(device):
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((peak for key, peak in BF16_PEAK_TFLOPS.items() if key in name), None)


def sides_of(case, device, baseline, compiled):
    """Each side of the comparison: a name and a function of (steps, init, init_path, data,
    workdir) returning (samples/s per window, seconds to the end of the first window)."""
    convolutional = len(CASES[case]["shape"]) == 3

    def ours(graphs="auto", front=None, env=None):
        return lambda steps, init, path, data, workdir: gputrain_run(case, device, steps, path, 0.01, workdir, front=front,
                                                                     graphs=graphs, env=env)[::2]

    def theirs(**peer):
        return lambda steps, init, path, data, workdir: pytorch_run(case, device, steps, init, 0.01, data, **peer)[::2]

    sides = [("gputrain", ours())]
    if device.type == "cuda":
        sides.append(("gputrain, cuda_graphs: off", ours("off")))
        if CASES[case]["precision"] != "fp32":  # the weights cast in one launch each way, against per layer
            sides.append(("gputrain, per-layer weight casts", ours(env={"GPUTRAIN_WEIGHT_CASTS": "per-layer"})))
    if baseline:
        sides.append(("gputrain, baseline build", ours(front=os.path.join(baseline, "bin", "gputrain"))))
    # The strongest eager loop a user writes: fused SGD, and channels_last for convolutions; and
    # the loop as usually written (NCHW, foreach SGD).
    sides.append(("PyTorch eager", theirs()))
    sides.append(("PyTorch eager, fused SGD" + (", channels_last" if convolutional else ""),
                  theirs(fused_sgd=True, channels_last=convolutional)))
    if compiled:
        for mode in ("default", "reduce-overhead"):
            sides.append(("torch.compile " + mode, theirs(fused_sgd=True, channels_last=convolutional, compile_mode=mode)))
    return sides


def throughput(case, device, runs, workdir, baseline=None, compiled=False):
    """Each side's median samples/s per run (the first window, warm-up and compilation, left out)
    and its seconds to the first window's end, run after run, sides interleaved."""
    c = CASES[case]
    windows = 6
    steps = c["window"] * windows
    data = synthetic(c["shape"], c["classes"], c["batch"] * steps, 0)
    init, init_path = initial_weights(case, workdir, "init")
    sides = sides_of(case, device, baseline, compiled)
    rates, first = {name: [] for name, _ in sides}, {name: [] for name, _ in sides}
    for _ in range(runs):  # alternate, so drift in machine state hits every side alike
        for name, run in sides:
            windows_seen, first_step = run(steps, init, init_path, data, workdir)
            rates[name].append(statistics.median(windows_seen[1:]))
            if first_step is not None:
                first[name].append(first_step)
    return rates, first


def loss_parity(workdir, steps=20):
    # gputrain steps with PyTorch's fused SGD kernel, which rounds the elements past a tensor's
    # last whole vector (the output bias's 10th) apart from the per-parameter ops, so the two
    # default loops may part in the last digit; with the same kernel they must not part at all.
    ours, (theirs, theirs_fused) = per_step_losses("mlp", workdir, steps, peers=({}, {"fused_sgd": True, "tensor_lr": True}))
    return largest_gap(ours, theirs), largest_gap(ours, theirs_fused), ours[-1], theirs[-1]


def transformer_parity(workdir, steps=20, seeds=range(5)):
    """The transformer with dropout off (the two sides draw their masks differently), from the
    weights of each of `seeds`: the largest gap between the two sides' first losses, and each
    seed's largest gap over its `steps` per-step losses. The two sides sum some products in other
    orders, so they part in the last bit of the first loss; training then grows that gap by an
    amount the weights decide (1.5e-6 to 2.6e-4 over 20 steps for 12 seeds on one machine), which
    a single unseeded draw reported as chance had it."""
    model = [m if not m.startswith("model.dropout=") else "model.dropout=0.0" for m in CASES["transformer"]["model"]]
    first, largest = 0.0, []
    with case_changed("transformer", model=model):
        for seed in seeds:
            ours, (theirs,) = per_step_losses("transformer", workdir, steps, seed=seed)
            first = max(first, abs(ours[0] - theirs[0]))
            largest.append(largest_gap(ours, theirs))
    return first, largest


def check_cases(workdir):
    """Every case for one step of batch 2 on the CPU, on both sides: the weights Python writes load
    into gputrain (the same names and shapes) and both loops run; fp32 cases without dropout must
    start from the same loss. For the test suite, so that a GPU session does not meet a broken case.
    Batch 2 (the least batch norm takes): bf16 on a CPU without bf16 instructions is slow, and
    transformer512's step of 8 took 35 s a side on the CI machine."""
    cpu = torch.device("cpu")
    for case in CASES:
        with case_changed(case, batch=2, window=1) as c:
            init, init_path = initial_weights(case, workdir, "check")
            _, ours, _ = gputrain_run(case, cpu, 1, init_path, 0.01, workdir, every=1)
            _, theirs, _ = pytorch_run(case, cpu, 1, init, 0.01, synthetic(c["shape"], c["classes"], 2, 0))
        if len(ours) != 1 or len(theirs) != 1 or not all(math.isfinite(x) for x in ours + theirs):
            sys.exit("%s: expected one finite loss from each side, got %s (gputrain) and %s (PyTorch)" % (case, ours, theirs))
        comparable = c["precision"] == "fp32" and not any(m.startswith("model.dropout=") and float(m.split("=")[1]) > 0
                                                           for m in c["model"])
        if comparable and abs(ours[0] - theirs[0]) > 1e-4:
            sys.exit("%s: the first step's loss differs: %.6f (gputrain) vs %.6f (PyTorch)" % (case, ours[0], theirs[0]))
        print("%s: one step on both sides, loss %.6f (gputrain) and %.6f (PyTorch)%s"
              % (case, ours[0], theirs[0], " (the same start)" if comparable else ""), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cases", default=None, help="comma-separated; default: mlp,cnn,transformer on CPU, mlp,resnet18,transformer512 on GPU")
    parser.add_argument("--baseline-build", metavar="DIR",
                        help="also time the gputrain of another build folder (DIR/bin/gputrain), interleaved: this build / that one")
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                        help="also time torch.compile, default and reduce-overhead modes (default: on a GPU only)")
    parser.add_argument("--check", action="store_true",
                        help="run every case for one step of batch 2 on the CPU on both sides, and nothing else (for the test suite)")
    args = parser.parse_args()
    if args.check:
        with tempfile.TemporaryDirectory() as workdir:
            check_cases(workdir)
        print(cuda_floor.line(runs=1))  # on a machine without a GPU: the reason it is not measured
        return
    device = torch.device(args.device)
    cases = (args.cases or ("mlp,resnet18,transformer512" if device.type == "cuda" else "mlp,cnn,transformer")).split(",")
    compiled = args.compile if args.compile is not None else device.type == "cuda"
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or platform.machine()
    print("# gputrain train vs PyTorch %s, %s (%s), %d threads, %s, medians of %d runs"
          % (torch.__version__, device, name, torch.get_num_threads(), time.strftime("%Y-%m-%d"), args.runs))
    with tempfile.TemporaryDirectory() as workdir:
        for case in cases:
            rates, first = throughput(case, device, args.runs, workdir, args.baseline_build, compiled)
            ours = statistics.median(rates["gputrain"])
            print("\n%s (batch %d, %s)\n" % (case, CASES[case]["batch"], CASES[case]["precision"]))
            print("| side | samples/s | runs' spread | gputrain / side | to the first window's end (first run) |")
            print("| --- | ---: | ---: | ---: | ---: |")
            for side, values in rates.items():
                median = statistics.median(values)
                # The first run apart: torch.compile's later runs read Inductor's on-disk cache.
                to_first = "%.1f s (%.1f s)" % (statistics.median(first[side]), first[side][0]) if first[side] else "-"
                print("| %s | %.0f | %.0f-%.0f | %.2fx | %s |" % (side, median, min(values), max(values), ours / median, to_first), flush=True)
            if STARTUP.get(case):
                to_step, step_done, setup, read, load = (statistics.median(v) for v in zip(*STARTUP[case]))
                print("\ngputrain's start, medians of its %d runs: %.2f s from the command to the first step, %.2f s of it the "
                      "set-up (%.2f s opening the data, %.2f s loading it into the cache), the rest loading the program and its "
                      "libraries; the first step (first-use work: on a GPU cuDNN's algorithm search) done %.2f s after the command"
                      % (len(STARTUP[case]), to_step, setup, read, load, step_done))
                if SETUP_PHASES.get(case):
                    phases = sorted(((statistics.median(v), phase) for phase, v in SETUP_PHASES[case].items()), reverse=True)
                    print("the set-up's phases, medians: " + ", ".join("%s %.2f s" % (phase, sec) for sec, phase in phases))
                if device.type == "cuda":
                    print(cuda_floor.line())
                for (of_case, side), runs in sorted(CAPTURES.items()):
                    if of_case == case:
                        print("CUDA-graph captures (%s), seconds each, run by run: %s"
                              % (side, "; ".join(", ".join("%.2f" % s for s in run) for run in runs)))
                        if CAPTURE_PARTS.get((of_case, side)):
                            medians = [statistics.median(p) for p in zip(*CAPTURE_PARTS[(of_case, side)])]
                            print("  medians: %.2f s settling, %.2f s recording, %.2f s instantiating, %.2f s the first replay" % tuple(medians))
            flops, peak = training_flops_per_sample(case), peak_of(device)
            achieved = ours * flops / 1e12
            print("\ngputrain computes %.3g TFLOPS (%.3g GFLOP a training sample)%s"
                  % (achieved, flops / 1e9, ", %.1f %% of the chip's %.0f bf16 TFLOPS" % (100 * achieved / peak, peak) if peak else ""))
            print("<!-- %s runs: %s -->" % (case, {k: [round(x) for x in v] for k, v in rates.items()}))
        if "transformer" in cases and device.type == "cpu":
            first, largest = transformer_parity(workdir)
            typical = statistics.median(largest)
            print("\nfp32 loss parity, transformer (dropout 0), 20 SGD steps on CPU from %d seeded inits: first loss apart by "
                  "at most %.2e (a bit of the last place); largest per-step difference, median %.2e (%.2e-%.2e); "
                  "goal <= 1e-4 (on the median): %s" % (len(largest), first, typical, min(largest), max(largest),
                                                     "met" if typical <= 1e-4 else "NOT met"))
        worst, worst_fused, ours, theirs = loss_parity(workdir)
        print("\nfp32 loss parity, MLP, 20 SGD steps on CPU: largest per-step difference %.2e "
              "(final loss %.6f vs %.6f); goal <= 1e-4: %s" % (worst, ours, theirs, "met" if worst <= 1e-4 else "NOT met"))
        print("the same against torch.optim.SGD(fused=True), the kernel gputrain steps with: %.2e%s"
              % (worst_fused, "" if worst_fused == 0 else " (expected 0.0: the two sides no longer compute the same thing)"))

if __name__ == "__main__":
    main()
