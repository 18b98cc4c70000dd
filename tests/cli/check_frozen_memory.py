#!/usr/bin/env python3
"""train.freeze shrinks the memory model as it shrinks the run: `profile --memory --json` counts
gradients and optimizer state for the trained parameters only (#50).

Usage: check_frozen_memory.py CONFIG -- GPUTRAIN
"""
import json
import subprocess
import sys


def memory(command, config, *settings):
    args = command + ["profile", "--memory", "--json", config, "--set", "device=cpu", *settings]
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args)}: exit {result.returncode}\n{result.stderr}")
    return json.loads(result.stdout)


def main():
    if len(sys.argv) != 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    config, command = sys.argv[1], [sys.argv[3]]
    whole = memory(command, config)
    frozen = memory(command, config, "--set", "train.freeze=['1']")  # the MLP's first Linear
    for key in ("gradient_bytes", "optimizer_state_bytes"):
        if not 0 < frozen[key] < whole[key]:
            sys.exit(f"FAIL: {key} {frozen[key]} with the first layer frozen, {whole[key]} without")
    if frozen["parameter_bytes"] != whole["parameter_bytes"]:
        sys.exit("FAIL: frozen parameters still take their memory")
    print(f"ok: gradients {whole['gradient_bytes']} -> {frozen['gradient_bytes']} bytes, optimizer state "
          f"{whole['optimizer_state_bytes']} -> {frozen['optimizer_state_bytes']} bytes with train.freeze")


if __name__ == "__main__":
    main()
