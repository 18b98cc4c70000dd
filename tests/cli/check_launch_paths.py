#!/usr/bin/env python3
"""CPU ranks started by each launcher train to the weights `gputrain train --nproc-per-node 2` does.

Usage: check_launch_paths.py WORKDIR PYTHON -- GPUTRAIN_TRAIN_COMMAND...

The reference is our launcher's 2 ranks (mpirun underneath, MPI). Then, on the same config:
  torchrun        torchrun --nproc-per-node 2 --no-python gputrain train ... (Gloo)
  srun            the two tasks `srun --ntasks 2` starts, with the variables srun gives its tasks
                  (SLURM_PROCID, SLURM_STEP_NUM_TASKS, ...; no Slurm here to run srun itself) (Gloo)
  mpirun-in-sbatch
                  mpirun -np 2 inside a batch script: the ranks inherit the job's SLURM variables,
                  and a step's as Open MPI starts its daemons with srun; mpirun's own win (MPI)
  srun-one-task   `srun gputrain train --nproc-per-node 2` in an `sbatch --ntasks 1` job: srun
                  started one task, which starts the 2 ranks itself (they were 1, silently)
Each must exit 0, report "2 ranks over <engine>" once, and write the reference's weights.
"""
import json
import os
import socket
import struct
import subprocess
import sys


def fail(message, output=""):
    print(output[-4000:])
    print("FAIL: " + message)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def weights(path):
    """safetensors by hand (no package needed): name -> raw bytes."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    return {k: body[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items() if k != "__metadata__"}


def run(name, argv, env, workdir):
    out_dir = os.path.join(workdir, name)
    argv = [a.replace("RUN_DIR", out_dir) for a in argv]
    result = subprocess.run(argv, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=300)
    if result.returncode != 0:
        fail(f"{name}: exit {result.returncode}", result.stdout)
    return out_dir, result.stdout


def run_tasks(name, argv, task_env, workdir):
    """Processes started side by side, as srun starts its tasks; each with its own variables."""
    out_dir = os.path.join(workdir, name)
    argv = [a.replace("RUN_DIR", out_dir) for a in argv]
    tasks = [subprocess.Popen(argv, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for env in task_env]
    outputs = [t.communicate(timeout=300)[0] for t in tasks]
    for rank, (t, out) in enumerate(zip(tasks, outputs)):
        if t.returncode != 0:
            fail(f"{name}: task {rank} exit {t.returncode}", out)
    return out_dir, "".join(outputs)


def main():
    workdir, python = sys.argv[1], sys.argv[2]
    base = sys.argv[sys.argv.index("--") + 1:]
    os.makedirs(workdir, exist_ok=True)
    common = ["--set", "device=cpu", "--set", "logging.progress=lines", "--set", "logging.dir=RUN_DIR", "--set", "data.samples=1024",
              "--set", "data.val_samples=128", "--set", "train.epochs=1", "--set", "model.hidden=[64]", "--set", "checkpoint.resume=never"]
    host = socket.gethostname()
    runs = {}
    runs["reference"] = (run("reference", base + common + ["--nproc-per-node", "2"], {}, workdir), "mpi")

    port = free_port()
    runs["torchrun"] = (run("torchrun", [python, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(port),
                                         "--no-python"] + base + common, {"OMP_NUM_THREADS": "1"}, workdir), "gloo")

    port = free_port()
    step = {"SLURM_JOB_ID": "4242", "SLURM_NTASKS": "2", "SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "2",
            "SLURM_STEP_TASKS_PER_NODE": "2", "SLURM_TASKS_PER_NODE": "2", "SLURM_JOB_NODELIST": "localhost",
            "SLURM_STEP_NODELIST": "localhost", "MASTER_PORT": str(port),
            # srun --cpus-per-task 1 binds each task to one core, as mpirun binds the reference's
            # ranks: one intra-op thread, so each sum runs in the same order
            "OMP_NUM_THREADS": "1"}
    runs["srun"] = (run_tasks("srun", base + common,
                              [{**step, "SLURM_PROCID": str(r), "SLURM_LOCALID": str(r)} for r in (0, 1)], workdir), "gloo")

    batch = {"SLURM_JOB_ID": "4243", "SLURM_NTASKS": "1", "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "1",
             "SLURM_JOB_NODELIST": host, "SLURM_NODELIST": host}
    mpirun = ["mpirun", "-np", "2", "--oversubscribe", "--mca", "btl_vader_single_copy_mechanism", "none"]
    if os.geteuid() == 0:
        mpirun.append("--allow-run-as-root")
    runs["mpirun-in-sbatch"] = (run("mpirun-in-sbatch", mpirun + base + common, {**batch, "SLURM_STEP_NUM_TASKS": "1"}, workdir), "mpi")

    one_task = {**batch, "SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "1", "SLURM_STEP_TASKS_PER_NODE": "1"}
    runs["srun-one-task"] = (run("srun-one-task", base + common + ["--nproc-per-node", "2"], one_task, workdir), "mpi")

    reference = weights(os.path.join(runs["reference"][0][0], "model.safetensors"))
    for name, ((out_dir, output), engine) in runs.items():
        if output.count(f"2 ranks over {engine}") < 1:
            fail(f"{name}: not 2 ranks over {engine}", output)
        if output.count("done: ") != 1:
            fail(f"{name}: rank 0 alone should report the end", output)
        got = weights(os.path.join(out_dir, "model.safetensors"))
        if got.keys() != reference.keys():
            fail(f"{name}: other tensors than the reference's: {sorted(got)}")
        differ = [k for k in got if got[k] != reference[k]]
        if differ:
            fail(f"{name}: weights differ from --nproc-per-node 2's in {differ}", output)
        print(f"{name}: 2 ranks over {engine}, weights identical to --nproc-per-node 2's ({len(got)} tensors)")


if __name__ == "__main__":
    main()
