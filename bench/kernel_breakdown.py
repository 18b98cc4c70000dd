#!/usr/bin/env python3
"""Where a GPU training step's time goes, kernel by kernel: gputrain against PyTorch.

  GPUTRAIN_BUILD=build python3 bench/kernel_breakdown.py [--batch 256] [--steps 10]

ResNet-18 (CIFAR stem, bf16 autocast, channels_last, SGD with momentum) on a CUDA GPU: gputrain
with train.cuda_graphs on and off (`gputrain profile --step --trace`, Kineto), and with graphs on
but ATen's batch norm (GPUTRAIN_BATCH_NORM=aten) or autocast's weight casts per layer
(GPUTRAIN_WEIGHT_CASTS=per-layer); PyTorch eager (fused SGD, channels_last) and
torch.compile(mode="reduce-overhead") (torch.profiler, the same Kineto). Each side's Chrome trace is read the same way: the GPU kernels of the traced steps,
their count and time per step by kind (convolutions and matrix products, batch norm, element-wise,
reductions, the optimizer, Inductor's fused Triton kernels, copies), and the GPU's busy share of
the steps' span. Kernels replayed from a CUDA graph are reported by CUPTI like any other.

  --check   the same machinery on the CPU, small (traces, parsing, the table), with the CPU's
            operators in place of kernels and no torch.compile: CI runs it, so that a GPU session's
            minutes never meet a broken script.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_models import resnet18  # noqa: E402  (the same ResNet-18 as the throughput benchmark)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRONT = os.path.join(os.environ.get("GPUTRAIN_BUILD", os.path.join(ROOT, "build")), "bin", "gputrain")

KINDS = [  # first match wins
    ("optimizer", re.compile(r"sgd|adam|multi_tensor|foreach|momentum", re.I)),
    ("triton (Inductor)", re.compile(r"^triton_", re.I)),
    ("conv / matmul", re.compile(r"conv|xmma|cutlass|gemm|wgrad|dgrad|fprop|implicit|sm\d+_|cudnn|nvjet|splitK", re.I)),
    ("batch norm", re.compile(r"batch_norm|batchnorm|bn_", re.I)),
    ("reduction", re.compile(r"reduce|norm_kernel|softmax|nll_loss", re.I)),
    ("element-wise", re.compile(r"elementwise|vectorized|unrolled|fill|copy", re.I)),
]


def kind_of(name):
    return next((kind for kind, pattern in KINDS if pattern.search(name)), "other")


def function_of(name):
    """A kernel's function name alone: 'void ns::f<T, true>(args)' -> 'f' (a kernel's variants summed)."""
    head = re.split(r"[<(]", name.removeprefix("void ").replace("(anonymous namespace)::", ""), maxsplit=1)[0]
    return head.rsplit("::", 1)[-1] or name[:60]


def optimizer_key(name):
    """An optimizer-kind kernel by what it computes: multi_tensor_apply_kernel's functor (the fused
    SGD, a foreach copy, a norm), else its function name."""
    functor = re.search(r"(\w+Functor)\b", name)
    return functor.group(1) if functor else function_of(name)


GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def read_trace(path, steps, categories=GPU_CATEGORIES):
    """Per step: kernel count, kernel microseconds by kind, the span of the GPU work, busy share."""
    with open(path) as f:
        events = json.load(f)
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in categories]
    if not gpu:
        raise SystemExit(f"{path}: no {' or '.join(categories)} event in the trace")
    by_kind, top, elementwise, batch_norm, optimizer, optimizer_launches = (collections.Counter() for _ in range(6))
    for e in gpu:
        kind = "copies" if e["cat"] in ("gpu_memcpy", "gpu_memset") else kind_of(e["name"])
        by_kind[kind] += e["dur"]
        top[e["name"][:120]] += e["dur"]
        if kind == "element-wise":
            elementwise[e["name"][:120]] += 1
        if kind == "batch norm":
            batch_norm[function_of(e["name"])] += e["dur"]
        if kind == "optimizer":
            optimizer[optimizer_key(e["name"])] += e["dur"]
            optimizer_launches[optimizer_key(e["name"])] += 1
    start = min(e["ts"] for e in gpu)
    end = max(e["ts"] + e["dur"] for e in gpu)
    busy = sum(e["dur"] for e in gpu)
    return {"kernels": len(gpu) / steps, "busy_us": busy / steps, "span_us": (end - start) / steps,
            "kinds": {k: v / steps for k, v in by_kind.items()}, "top": [(n, d / steps) for n, d in top.most_common(12)],
            "elementwise": [(n, c / steps) for n, c in elementwise.most_common(12)],
            "batch_norm": [(n, d / steps) for n, d in batch_norm.most_common()],
            "optimizer": [(n, d / steps, optimizer_launches[n] / steps) for n, d in optimizer.most_common()]}


def gputrain_side(graphs, batch, workdir, check=False, env=None):
    """`env`: variables that switch a kernel of ours off for the comparison (GPUTRAIN_BATCH_NORM=aten,
    GPUTRAIN_WEIGHT_CASTS=per-layer)."""
    trace = os.path.join(workdir, "-".join(["gputrain", graphs, *(env or {}).values()]) + ".json")
    args = [FRONT, "profile", "--step", "--trace", trace, os.path.join(ROOT, "configs", "resnet18-cifar.yaml"),
            "--set", f"train.cuda_graphs={graphs}", "--set", f"train.batch_size={batch}", "--set", "data.samples=8192"]
    if check:  # the CPU: fp32, a few steps
        args += ["--set", "device=cpu", "--set", "train.precision=fp32", "--set", "train.cuda_graphs=auto", "--steps", "2"]
    result = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {result.returncode}:\n{result.stderr}")
    side = read_trace(trace, 5, ("cpu_op",) if check else GPU_CATEGORIES)  # profile --trace traces 5 steps
    # The host's side as profile --step itself counted it, untraced: time, operators, launches.
    side["host"] = [line.strip() for line in result.stdout.splitlines() if re.match(r"\s*(host per step|host ops per step|launches per step)", line)]
    return side


def pytorch_side(mode, batch, steps, workdir, device=torch.device("cuda")):
    torch.manual_seed(0)
    model = resnet18(10).to(device).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, fused=device.type == "cuda")
    x = torch.randn(batch, 3, 32, 32, device=device).contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (batch,), device=device)

    def train_step(x, y):
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    step = torch.compile(train_step, mode=mode) if mode else train_step

    def run(n):
        for _ in range(n):
            if mode == "reduce-overhead":
                torch.compiler.cudagraph_mark_step_begin()
            step(x, y)

    gpu = device.type == "cuda"
    run(20 if gpu else 1)  # compilation, capture, cuDNN's algorithm choice
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    sync()
    trace = os.path.join(workdir, f"pytorch-{mode or 'eager'}.json")
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if gpu else [])
    with torch.profiler.profile(activities=activities) as prof:
        run(steps)
        sync()
    prof.export_chrome_trace(trace)
    return read_trace(trace, steps, GPU_CATEGORIES if gpu else ("cpu_op",))


def table(sides):
    kinds = sorted({k for s in sides.values() for k in s["kinds"]}, key=lambda k: -max(s["kinds"].get(k, 0) for s in sides.values()))
    names = list(sides)
    print("| per step | " + " | ".join(names) + " |")
    print("| --- |" + " ---: |" * len(names))
    print("| kernels | " + " | ".join(f"{sides[n]['kernels']:.0f}" for n in names) + " |")
    print("| GPU span, ms | " + " | ".join(f"{sides[n]['span_us'] / 1000:.3f}" for n in names) + " |")
    print("| kernel time, ms | " + " | ".join(f"{sides[n]['busy_us'] / 1000:.3f}" for n in names) + " |")
    print("| busy share of the span | " + " | ".join(f"{sides[n]['busy_us'] / sides[n]['span_us']:.0%}" for n in names) + " |")
    for k in kinds:
        print(f"| {k}, ms | " + " | ".join(f"{sides[n]['kinds'].get(k, 0) / 1000:.3f}" for n in names) + " |")
    for n in names:
        for line in sides[n].get("host", []):
            print(f"{n}: {line}")
    for n in names:
        print(f"\n{n}: the heaviest kernels (ms a step)")
        for name, us in sides[n]["top"]:
            print(f"  {us / 1000:7.3f}  {name}")
        print(f"{n}: the most frequent element-wise kernels (launches a step)")
        for name, count in sides[n]["elementwise"]:
            print(f"  {count:7.1f}  {name}")
        if sides[n]["batch_norm"]:
            print(f"{n}: batch norm by kernel function (ms a step, all sites and variants)")
            for name, us in sides[n]["batch_norm"]:
                print(f"  {us / 1000:7.3f}  {name}")
        if sides[n]["optimizer"]:  # the fused SGD apart from the weight casts' copies and a norm
            print(f"{n}: the optimizer kind by what it computes (ms a step, launches a step)")
            for name, us, launches in sides[n]["optimizer"]:
                print(f"  {us / 1000:7.3f}  {launches:5.1f}  {name}")


def check():
    """Both sides traced and read on the CPU, as on the GPU, and the table printed."""
    with tempfile.TemporaryDirectory() as workdir:
        sides = {"gputrain": gputrain_side("off", 8, workdir, check=True),
                 "PyTorch eager": pytorch_side(None, 8, 2, workdir, device=torch.device("cpu"))}
    table(sides)
    for name, side in sides.items():
        if side["kernels"] <= 0 or not side["kinds"].get("conv / matmul"):
            raise SystemExit(f"{name}: no convolution among the traced operators: {side['kinds']}")
    print("kernel_breakdown.py --check: both traces read")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=10, help="PyTorch's traced steps (gputrain's profile traces 5)")
    parser.add_argument("--check", action="store_true", help="the machinery on the CPU, small (CI)")
    args = parser.parse_args()
    if args.check:
        check()
        return
    if not torch.cuda.is_available():
        raise SystemExit("kernel_breakdown.py needs a CUDA GPU (--check runs its machinery on the CPU)")
    torch.backends.cudnn.benchmark = True
    print(f"# ResNet-18 CIFAR bf16, batch {args.batch}, {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"{time.strftime('%Y-%m-%d')}\n")
    sides = {}

    def measured(name, side):  # a line as each side ends: a run cut short by a time limit keeps them
        sides[name] = side
        norms = ", ".join(f"{n} {us / 1000:.3f}" for n, us in side["batch_norm"])
        print(f"{name}: {side['kernels']:.0f} kernels, {side['busy_us'] / 1000:.3f} ms of kernels in a "
              f"{side['span_us'] / 1000:.3f} ms span a step" + (f"; batch norm (ms): {norms}" if norms else ""), flush=True)

    with tempfile.TemporaryDirectory() as workdir:
        for graphs in ("on", "off"):
            measured(f"gputrain graphs {graphs}", gputrain_side(graphs, args.batch, workdir))
        measured("reduce-overhead", pytorch_side("reduce-overhead", args.batch, args.steps, workdir))
        # gputrain's batch-norm kernels against ATen's, and its batched weight casts against
        # autocast's per layer, all in the graph
        measured("gputrain graphs on, ATen batch norm", gputrain_side("on", args.batch, workdir, env={"GPUTRAIN_BATCH_NORM": "aten"}))
        measured("gputrain graphs on, per-layer casts",
                 gputrain_side("on", args.batch, workdir, env={"GPUTRAIN_WEIGHT_CASTS": "per-layer"}))
        measured("PyTorch eager", pytorch_side(None, args.batch, args.steps, workdir))
    print()
    table(sides)


if __name__ == "__main__":
    main()
