#!/usr/bin/env python3
"""Wall time of gputrain's answers vs the Python tools users reach for today, in one run.

  .venv/bin/python bench/startup.py [--build build] [--runs 9]

Times (median of --runs, after one warm-up run each):
  gputrain --version                       vs  python -c "import torch; print(torch.__version__, ...)"
  gputrain verify --level quick [--allow-cpu] vs  python -m torch.utils.collect_env
Prints a Markdown table for docs/benchmarks.md with the machine and date.
"""
import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time


def median_seconds(command, runs, env):
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)  # warm caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), max(times)


def machine():
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    gpu = "no GPU"
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=10).stdout.strip().replace("\n", ", ") or gpu
    except (OSError, subprocess.TimeoutExpired):
        pass
    return f"{cpu}, {os.cpu_count()} logical cores, {gpu}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    front = os.path.join(args.build, "bin", "gputrain")
    env = dict(os.environ)
    have_gpu = subprocess.run([front, "verify", "--json"], capture_output=True).returncode != 3
    verify = [front, "verify", "--level", "quick"] + ([] if have_gpu else ["--allow-cpu"])
    pairs = [
        ("versions", [front, "--version"],
         [sys.executable, "-c", "import torch; print(torch.__version__, torch.version.cuda, "
                                "torch.backends.cudnn.version(), torch.cuda.nccl.version() if torch.cuda.is_available() else '')"]),
        ("is this box ready", verify, [sys.executable, "-m", "torch.utils.collect_env"]),
    ]
    print(f"Machine: {machine()}; {datetime.date.today().isoformat()}; median of {args.runs} runs\n")
    print("| question | gputrain | s | Python peer | s | peer / gputrain |")
    print("| --- | --- | ---: | --- | ---: | ---: |")
    for label, ours, peer in pairs:
        ours_s = median_seconds(ours, args.runs, env)
        peer_s = median_seconds(peer, args.runs, env)
        ours_cmd = " ".join(["gputrain"] + ours[1:])
        peer_cmd = " ".join(["python"] + peer[1:]) if len(" ".join(peer[1:])) < 40 else "python -c 'import torch; print(versions)'"
        print(f"| {label} | `{ours_cmd}` | {ours_s[0]:.3f} | `{peer_cmd}` | {peer_s[0]:.3f} | {peer_s[0] / ours_s[0]:.1f}x |")


if __name__ == "__main__":
    main()
