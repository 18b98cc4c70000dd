#!/usr/bin/env python3
"""The start-up floor of any CUDA program on this machine: loading the driver library, cuInit, and
the device's primary context, timed through libcuda alone (no LibTorch, no runtime) in fresh
processes. Issue #48 asks gputrain to reach its first step within 3 s: what this takes, no program
can save (only hide behind other work), so the bench reports gputrain's start-up beside it.

  python3 bench/cuda_floor.py [--runs 3]

Also says whether the driver keeps the GPU initialised between processes (persistence mode):
without it, each process's cuInit brings the GPU up again.
"""
import argparse
import json
import statistics
import subprocess
import sys

# Run in a fresh interpreter each time: a process initialises the driver once.
_PROBE = r"""
import ctypes, json, time
t0 = time.perf_counter()
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError as e:
    print(json.dumps({"error": "no CUDA driver library here (%s)" % e})); raise SystemExit
t1 = time.perf_counter()
if cuda.cuInit(0) != 0:
    print(json.dumps({"error": "cuInit failed: no usable GPU"})); raise SystemExit
t2 = time.perf_counter()
device, context = ctypes.c_int(), ctypes.c_void_p()
ok = cuda.cuDeviceGet(ctypes.byref(device), 0) == 0 and cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0
ok = ok and cuda.cuCtxSetCurrent(context) == 0 and cuda.cuCtxSynchronize() == 0
t3 = time.perf_counter()
print(json.dumps({"load": t1 - t0, "init": t2 - t1, "context": t3 - t2} if ok else {"error": "no context on device 0"}))
"""


def persistence_mode():
    """nvidia-smi's persistence mode of GPU 0 ("Enabled"/"Disabled"), or None where it cannot say."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=persistence_mode", "--format=csv,noheader", "-i", "0"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def measure(runs=3):
    """Medians over `runs` fresh processes: {"load", "init", "context", "total"} in seconds, or
    {"error": why} where this machine has no usable CUDA driver."""
    samples = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120)
        lines = out.stdout.strip().splitlines()
        if out.returncode != 0 or not lines:
            return {"error": "the probe failed: " + (out.stderr.strip().splitlines() or ["no output"])[-1]}
        sample = json.loads(lines[-1])
        if "error" in sample:
            return sample
        sample["total"] = sample["load"] + sample["init"] + sample["context"]
        samples.append(sample)
    return {key: statistics.median(s[key] for s in samples) for key in samples[0]}


def line(runs=3):
    """One sentence for a benchmark's output."""
    floor = measure(runs)
    if "error" in floor:
        return "the CUDA start-up floor: not measured, " + floor["error"]
    mode = persistence_mode()
    return ("the CUDA start-up floor (libcuda alone, medians of %d fresh processes): %.2f s = %.2f s loading the driver "
            "library, %.2f s cuInit, %.2f s the primary context; persistence mode %s"
            % (runs, floor["total"], floor["load"], floor["init"], floor["context"], mode or "unknown"))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    print(line(parser.parse_args().runs))


if __name__ == "__main__":
    main()
