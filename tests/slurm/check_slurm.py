#!/usr/bin/env python3
"""CPU ranks under a real Slurm: a one-node cluster (munged, slurmctld, slurmd from Debian's
packages) started in a scratch folder for this test and stopped after it.

Usage: check_slurm.py WORKDIR -- GPUTRAIN_TRAIN_COMMAND...

Each case trains 2 CPU ranks to the weights `gputrain train --nproc-per-node 2` writes:
  srun             `srun -n 2 --cpus-per-task 1 gputrain train ...`: srun's tasks are the ranks (Gloo)
  mpirun-in-sbatch `mpirun -np 2 gputrain train ...` inside an `sbatch -n 1` script: the ranks see the
                   job's SLURM variables and mpirun's; mpirun's win (MPI)
  srun-one-task    `srun -n 1 gputrain train ... --nproc-per-node 2` in the same script: srun started
                   one task, which starts the 2 ranks itself (MPI)
Needs root (slurmd) and the packages slurmd slurmctld slurm-client munge; exits 77 (skipped),
saying which is missing, without them.
"""
import os
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cli"))
from check_launch_paths import fail, weights  # noqa: E402

SKIP = 77
DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "srun", "sbatch", "sinfo")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """munged, slurmctld and slurmd of a one-node cluster, all under `folder`."""

    def __init__(self, folder):
        self.folder = folder
        self.procs = []
        self.env = {**os.environ, "SLURM_CONF": os.path.join(folder, "slurm.conf")}

    def __enter__(self):
        f = self.folder
        for sub in ("state", "spool", "log"):
            os.makedirs(os.path.join(f, sub), exist_ok=True)
        key, sock = os.path.join(f, "munge.key"), os.path.join(f, "munge.sock")
        subprocess.run(["mungekey", "--create", f"--keyfile={key}", "--force"], check=True, capture_output=True)
        os.chmod(key, 0o600)
        subprocess.run(["munged", "--force", f"--socket={sock}", f"--key-file={key}", f"--log-file={f}/log/munged.log",
                        f"--pid-file={f}/munged.pid", f"--seed-file={f}/munged.seed"], check=True, capture_output=True)
        host = socket.gethostname().split(".")[0]
        with open(self.env["SLURM_CONF"], "w") as conf:
            conf.write(f"""ClusterName=gputrain
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={f}/state
SlurmdSpoolDir={f}/spool
SlurmctldPidFile={f}/slurmctld.pid
SlurmdPidFile={f}/slurmd.pid
SlurmctldLogFile={f}/log/slurmctld.log
SlurmdLogFile={f}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
        for daemon in ("slurmctld", "slurmd"):
            log = open(os.path.join(f, "log", daemon + ".out"), "w")
            self.procs.append(subprocess.Popen([daemon, "-D", "-f", self.env["SLURM_CONF"]], env=self.env, stdout=log, stderr=log))
            time.sleep(1)
        deadline = time.time() + 60
        while time.time() < deadline:
            state = subprocess.run(["sinfo", "-h", "-o", "%t"], env=self.env, capture_output=True, text=True).stdout.strip()
            if state == "idle":
                return self
            time.sleep(0.5)
        self.__exit__()
        fail(f"the node did not come up within 60 s (sinfo: {state!r}); see {f}/log")

    def __exit__(self, *_):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run(["munged", "--stop", f"--socket={self.folder}/munge.sock"], capture_output=True)

    def run(self, argv, what):
        done = subprocess.run(argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        if done.returncode != 0:
            fail(f"{what}: exit {done.returncode}", done.stdout)
        return done.stdout


def main():
    workdir = sys.argv[1]
    base = sys.argv[sys.argv.index("--") + 1:]
    missing = [d for d in DAEMONS if shutil.which(d) is None]
    if missing:
        print(f"SKIP: no {', '.join(missing)} (apt-get install slurmd slurmctld slurm-client munge)")
        sys.exit(SKIP)
    if os.geteuid() != 0:
        print("SKIP: slurmd runs jobs as any user only as root")
        sys.exit(SKIP)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    common = ["--set", "device=cpu", "--set", "logging.progress=lines", "--set", "data.samples=1024", "--set", "data.val_samples=128",
              "--set", "train.epochs=1", "--set", "model.hidden=[64]", "--set", "checkpoint.resume=never"]
    reference = subprocess.run(base + common + ["--set", f"logging.dir={workdir}/reference", "--nproc-per-node", "2"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if reference.returncode != 0:
        fail(f"--nproc-per-node 2: exit {reference.returncode}", reference.stdout)
    quoted = " ".join("'" + a.replace("'", "'\\''") + "'" for a in base + common)
    script = os.path.join(workdir, "job.sh")
    with open(script, "w") as job:
        job.write(f"""#!/bin/bash
set -e
mpirun -np 2 --oversubscribe {quoted} --set logging.dir={workdir}/mpirun-in-sbatch
srun -n 1 {quoted} --set logging.dir={workdir}/srun-one-task --nproc-per-node 2
""")
    with Cluster(os.path.join(workdir, "cluster")) as cluster:
        outputs = {"srun": cluster.run(["srun", "-n", "2", "--cpus-per-task", "1", "--cpu-bind=cores"] + base + common +
                                       ["--set", f"logging.dir={workdir}/srun"], "srun -n 2")}
        cluster.run(["sbatch", "--wait", "-n", "1", "-c", "2", "-o", f"{workdir}/job.out", script], "sbatch --wait")
        with open(f"{workdir}/job.out") as out:
            outputs["mpirun-in-sbatch"] = outputs["srun-one-task"] = out.read()
    want = weights(f"{workdir}/reference/model.safetensors")
    for case, engine in (("srun", "gloo"), ("mpirun-in-sbatch", "mpi"), ("srun-one-task", "mpi")):
        if f"run dir {workdir}/{case}; 2 ranks over {engine}" not in outputs[case]:
            fail(f"{case}: not 2 ranks over {engine}", outputs[case])
        got = weights(f"{workdir}/{case}/model.safetensors")
        differ = [k for k in want if got.get(k) != want[k]]
        if differ:
            fail(f"{case}: weights differ from --nproc-per-node 2's in {differ}", outputs[case])
        print(f"{case}: 2 ranks over {engine} under Slurm, weights identical to --nproc-per-node 2's ({len(want)} tensors)")


if __name__ == "__main__":
    main()
