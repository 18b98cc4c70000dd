#!/usr/bin/env python3
"""The losses every ready config trains to on the CPU in deterministic mode, to compare two builds.

A refactor of the training engine must not change a single bit of what it computes. This trains
each configs/*.yaml for a few steps across an epoch's end (validation, best.pt, the schedule), on
the CPU with train.deterministic, logging every step, and writes each step's loss and each epoch's
validation figures as JSON; `compare` checks another build's against such a file, bit for bit.

Usage: scripts/config-losses.py record OUT.json [--bin build/bin]
       scripts/config-losses.py compare EXPECTED.json [--bin build/bin]
Exit 0 when every figure matches (compare), 1 when one differs, 2 on bad usage.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def config_args(name, fixtures):
    """What the test suite sets to run a config on a CPU (tests/cli/CMakeLists.txt's cli.config.*)."""
    if "imagenet" in name:
        return ["--set", "data.shape=[3,64,64]"]
    if name == "cifar10":
        return ["--set", f"data.path={fixtures}/cifar"]
    if name == "image-folder":
        return ["--set", f"data.path={fixtures}/folder/train", "--set", f"data.val_path={fixtures}/folder/val",
                "--set", "data.image_size=[32,32]", "--set", "train.max_batch_size=4"]
    return []


def run(front, config, work, fixtures):
    name = os.path.splitext(os.path.basename(config))[0]
    run_dir = os.path.join(work, name)
    cmd = [front, "train", config, "--set", "device=cpu", "--set", "train.deterministic=true",
           "--set", "train.max_steps=12", "--set", "train.batch_size=4", "--set", "data.samples=32",
           "--set", "data.val_samples=8", "--set", "logging.every_steps=1", "--set", "checkpoint.resume=never",
           "--set", f"logging.dir={run_dir}", *config_args(name, fixtures)]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    if done.returncode != 0:
        sys.exit(f"{name}: exit {done.returncode}\n{done.stderr[-2000:]}")
    steps, epochs = [], []
    with open(os.path.join(run_dir, "metrics.jsonl")) as records:
        for line in records:
            record = json.loads(line)
            if record.get("kind") == "step":
                steps.append(record["loss"])
            elif record.get("kind") == "epoch":
                epochs.append({k: record.get(k) for k in ("train_loss", "val_loss", "val_accuracy", "val_mse", "val_mae")})
    return name, {"steps": steps, "epochs": epochs}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["record", "compare"])
    parser.add_argument("file")
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    args = parser.parse_args()
    front = os.path.join(args.bin, "gputrain")
    with tempfile.TemporaryDirectory() as work:
        fixtures = os.path.join(work, "fixtures")
        subprocess.run([sys.executable, os.path.join(ROOT, "tests", "data", "formats", "make_fixtures.py"), fixtures],
                       check=True, capture_output=True)
        got = dict(run(front, c, work, fixtures) for c in sorted(glob.glob(os.path.join(ROOT, "configs", "*.yaml"))))
    if args.mode == "record":
        with open(args.file, "w") as out:
            json.dump(got, out, indent=1)
        print(f"recorded {len(got)} configs in {args.file}")
        return 0
    with open(args.file) as f:
        expected = json.load(f)
    differ = [name for name in expected if got.get(name) != expected[name]]
    for name in differ:
        print(f"{name}: differs\n  expected {expected[name]}\n  got      {got.get(name)}")
    print(f"{len(expected) - len(differ)} passed, {len(differ)} failed")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
