#!/usr/bin/env python3
"""gputrain's batch-size search vs Lightning's Tuner.scale_batch_size, side by side in one run.

Same model (configs/mlp.yaml's MLP: 256 -> 512 -> 256 -> 10, LayerNorm, ReLU, dropout 0.1, SGD with
Nesterov momentum), same data size (16384 samples of 256 floats) and the same memory cap, on the CPU:

- gputrain: `gputrain profile --batch --exhaustive --json --max-memory CAP` (the cap is gputrain's
  counting CPU allocator); then `gputrain train` with `batch_size: auto` for one epoch under the same
  cap, checking metrics.jsonl has no OOM event.
- Lightning: `Tuner(trainer).scale_batch_size(mode=power|binsearch)` with its defaults (init 2,
  3 steps per trial) in a process whose address space is capped with RLIMIT_AS at its size before
  the data and model plus CAP, so torch's DefaultCPUAllocator fails beyond it the way Lightning
  recognises. Then one epoch at the batch it found, under the same cap.

The true largest batch that fits is found on each side by bisection with real steps under that
side's own cap (the two caps count slightly different things: tensor bytes vs address space), and
each search is judged against its own truth. Each side runs --runs times; figures are medians.

With --device cuda (the GPU machine) both sides run on GPU 0 under the caching allocator's memory
fraction: gputrain's `--max-memory CAP` sets it, the Lightning process calls
torch.cuda.set_per_process_memory_fraction(CAP / total) before anything else, so both count the
same bytes and a real CUDA OOM is what each side recognises. The MLP's data stays in host memory
on Lightning's side (its DataLoader) and in GPU memory on gputrain's (data.cache vram, counted
against its cap), each side's truth again found under its own conditions.

Usage: bench/auto_batch_vs_lightning.py [--cap-mib 64] [--runs 3] [--device cpu|cuda]
Needs: pip install lightning (into .venv; not a gputrain dependency; the GPU machine has it).
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("GPUTRAIN_BUILD", os.path.join(ROOT, "build"))
FRONT = os.path.join(BUILD, "bin", "gputrain")
CONFIG = os.path.join(ROOT, "configs", "mlp.yaml")
SAMPLES, FEATURES, CLASSES = 16384, 256, 10
COMMON_SETS = [f"data.samples={SAMPLES}", "data.val_samples=512"]


def gputrain_side(cap_mib, device):
    sets = sum((["--set", s] for s in COMMON_SETS + [f"device={device}"]), [])
    start = time.perf_counter()
    out = subprocess.run([FRONT, "profile", "--batch", "--exhaustive", "--json", CONFIG, *sets, "--max-memory", f"{cap_mib}MiB"],
                         check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    run_dir = tempfile.mkdtemp(prefix="gputrain-bench-auto-")
    try:
        subprocess.run([FRONT, "train", CONFIG, *sets, "--set", "train.batch_size=auto", "--set", "train.epochs=1",
                        "--set", f"logging.dir={run_dir}", "--set", "logging.progress=off", "--set", "logging.tensorboard=false",
                        "--max-memory", f"{cap_mib}MiB"], check=True, capture_output=True, text=True)
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            ooms = sum(1 for line in f if json.loads(line)["kind"] == "oom")
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    return {"batch": report["memory_batch"], "trial_steps": report["memory_probe_steps"], "seconds": report["seconds"],
            "truth": report["largest_fitting_batch"], "oom_after": ooms, "wall": time.perf_counter() - start}


LIGHTNING_CHILD = r'''
import json, resource, sys, time
cap, mode, device = int(sys.argv[1]), sys.argv[2], sys.argv[3]
import torch, torch.nn as nn
import lightning.pytorch as pl
from lightning.pytorch.tuner import Tuner
from lightning.pytorch.utilities.memory import is_oom_error
torch.set_num_threads(2)
def vm_size():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
if device == "cuda":  # the caching allocator's fraction, as gputrain's --max-memory sets it
    torch.cuda.set_per_process_memory_fraction(cap / torch.cuda.get_device_properties(0).total_memory, 0)
else:  # the address space: torch's CPU allocator then fails beyond the cap the way Lightning recognises
    resource.setrlimit(resource.RLIMIT_AS, (vm_size() + cap, resource.RLIM_INFINITY))
S, F, C = %d, %d, %d
x, y = torch.randn(S, F), torch.randint(0, C, (S,))
def make_net():
    return nn.Sequential(nn.Linear(F, 512), nn.LayerNorm(512), nn.ReLU(), nn.Dropout(0.1),
                         nn.Linear(512, 256), nn.LayerNorm(256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, C))
class Module(pl.LightningModule):
    def __init__(self):
        super().__init__(); self.net = make_net(); self.batch_size = 2; self.steps = 0
    def training_step(self, batch, i):
        self.steps += 1
        return nn.functional.cross_entropy(self.net(batch[0]), batch[1])
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    def train_dataloader(self):
        return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=self.batch_size, shuffle=True)
def trainer(**kw):
    return pl.Trainer(accelerator="gpu" if device == "cuda" else "cpu", devices=1, logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False, **kw)
m = Module()
start = time.perf_counter()
found = Tuner(trainer(max_epochs=1)).scale_batch_size(m, mode=mode)
seconds = time.perf_counter() - start
trial_steps = m.steps
if device == "cuda":  # the tuned module's weights would count against the truth's cap
    import gc
    del m
    gc.collect()
    torch.cuda.empty_cache()
def fits(b):
    net = make_net().to(device); opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    try:
        for _ in range(2):
            idx = torch.arange(b)
            nn.functional.cross_entropy(net(x[idx].to(device)), y[idx].to(device)).backward(); opt.step(); opt.zero_grad()
        return True
    except RuntimeError as e:
        if is_oom_error(e): return False
        raise
    finally:
        del net, opt
        if device == "cuda": torch.cuda.empty_cache()
lo, hi = 1, S + 1
if fits(S): lo = S
else:
    hi = S
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid): lo = mid
        else: hi = mid
oom_after = 0
try:
    m2 = Module(); m2.batch_size = found
    trainer(max_epochs=1).fit(m2)
except RuntimeError as e:
    if not is_oom_error(e): raise
    oom_after = 1
print(json.dumps({"batch": found, "trial_steps": trial_steps, "seconds": seconds, "truth": lo, "oom_after": oom_after}))
''' % (SAMPLES, FEATURES, CLASSES)


def lightning_side(cap_mib, mode, device):
    start = time.perf_counter()
    child = subprocess.run([sys.executable, "-c", LIGHTNING_CHILD, str(cap_mib * 1024 * 1024), mode, device],
                           capture_output=True, text=True)
    if child.returncode != 0:  # its traceback, not only an exit status
        sys.exit(f"Lightning's {mode} search failed (exit {child.returncode}):\n{child.stderr[-4000:]}")
    result = json.loads(child.stdout.strip().splitlines()[-1])
    result["wall"] = time.perf_counter() - start
    return result


def median_row(name, runs):
    med = lambda k: statistics.median(r[k] for r in runs)
    last = runs[-1]
    return {"side": name, "batch": last["batch"], "truth": last["truth"], "ratio": last["batch"] / last["truth"],
            "trial_steps": med("trial_steps"), "seconds": med("seconds"), "oom_after": max(r["oom_after"] for r in runs)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cap-mib", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args()
    try:
        import lightning  # noqa: F401
    except ImportError:
        sys.exit("Lightning is not installed: .venv/bin/pip install lightning")
    if not os.path.exists(FRONT):
        sys.exit(f"{FRONT} not found: build first (scripts/bootstrap.sh build) or set GPUTRAIN_BUILD")
    sides = {"gputrain": [], "lightning power": [], "lightning binsearch": []}
    search = {"gputrain": lambda: gputrain_side(args.cap_mib, args.device),
              "lightning power": lambda: lightning_side(args.cap_mib, "power", args.device),
              "lightning binsearch": lambda: lightning_side(args.cap_mib, "binsearch", args.device)}
    for run in range(args.runs):  # alternating, so drift hits every side alike
        for name, side in search.items():
            sides[name].append(side())
            print(f"run {run + 1}, {name}: {json.dumps(sides[name][-1])}", file=sys.stderr, flush=True)
    rows = [median_row(name, runs) for name, runs in sides.items()]
    if args.device == "cuda":
        import torch
        where = f"GPU ({torch.cuda.get_device_name(0)})"
    else:
        where = f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"
    print(f"# auto batch size, MLP on {SAMPLES} samples, cap {args.cap_mib} MiB, {where}, {time.strftime('%Y-%m-%d')}, "
          f"median of {args.runs}")
    print("| search | batch found | largest that fits | found / largest | trial steps | search time (s) | OOM in the epoch after |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['side']} | {r['batch']} | {r['truth']} | {r['ratio']:.3f} | {r['trial_steps']:.0f} | "
              f"{r['seconds']:.2f} | {'yes' if r['oom_after'] else 'no'} |")
    ours = rows[0]
    for r in rows[1:]:
        print(f"gputrain / {r['side']}: trial steps {ours['trial_steps'] / r['trial_steps']:.2f}x "
              f"(goal < 0.5), search time {ours['seconds'] / r['seconds']:.2f}x")


if __name__ == "__main__":
    main()
