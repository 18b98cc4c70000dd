#!/usr/bin/env python3
"""`gputrain train --nproc-per-node 2` on the CPU (MPI ranks under mpirun), end to end.

Usage: check_launcher.py MODE WORKDIR -- GPUTRAIN_TRAIN_COMMAND...
Modes:
  ok         two ranks train; rank 0 alone reports; exit 0.
  kill-rank  rank 1 is SIGKILLed mid-run: the launcher exits non-zero at once and names rank 1.
  kill-launcher
             the launcher is SIGKILLed mid-run (a CI timeout, the OOM killer): its ranks do not
             train on unwatched; they stop as on SIGTERM, with a checkpoint the same command resumes.
  sigterm    SIGTERM to the launcher: both ranks checkpoint and exit 130, with none of mpirun's
             banners on their exit codes after; the same command resumes.
  early-stop train.early_stop_patience stops both ranks after the same epoch (none waits for the
             other in a collective); rank 0 ends on the best epoch's weights.
  max-time   train.max_time ends both ranks at the same step (exit 0, rank 0 writes the weights);
             the same command then has nothing left to train.
  setup-error
             a data file that does not exist stops every rank with the same error: it is shown
             once, with the launcher's one-line report, and none of mpirun's abort banner or help
             errors, nor a rank announcing a checkpoint as mpirun brings the job down; exit 2.
  uneven-epoch
             shards one sample apart and train.max_steps ending the run on the step where one rank
             is through its shard and the other has a sample left: neither validates (validation is
             collective), and the resume finishes the epoch on both, validating it once.
"""
import os
import shutil
import signal
import subprocess
import sys
import time


def fail(message, output=""):
    print(output)
    print("FAIL: " + message)
    sys.exit(1)


def descendants(pid):
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except OSError:
            continue
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def rank_process(launcher_pid, rank):
    for pid in descendants(launcher_pid):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            return pid
    return None


def zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def start(command):
    print("+ " + " ".join(command), flush=True)
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for_line(process, text, seconds):
    lines, deadline = [], time.time() + seconds
    while time.time() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if text in line:
            return lines
    fail(f"no line with {text!r} within {seconds} s", "".join(lines))


def finished_run(command, expected):
    """Runs `command` to its end: exit 0, every text of `expected` said, and one report (rank 0's)."""
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = run.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        for pid in [run.pid] + descendants(run.pid):  # the ranks too: one stuck in a collective stops on no signal
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        out, _ = run.communicate()
        fail("still running after 300 s: a rank waits in a collective the others never issue", out)
    if run.returncode != 0:
        fail(f"exit {run.returncode}", out)
    for text in expected:
        if text not in out:
            fail(f"missing {text!r}", out)
    if out.count("done: ") != 1:
        fail("rank 0 alone should report the end", out)
    return out


def main():
    mode, workdir = sys.argv[1], sys.argv[2]
    base = sys.argv[sys.argv.index("--") + 1:]
    shutil.rmtree(workdir, ignore_errors=True)
    common = ["--set", "device=cpu", "--set", "logging.progress=lines", "--set", f"logging.dir={workdir}",
              "--set", "data.samples=2048", "--set", "data.val_samples=256", "--nproc-per-node", "2"]

    if mode == "ok":
        # A bucket under 1 MiB is said as set (it read "of up to 0 MiB").
        out = finished_run(base + common + ["--set", "train.epochs=1", "--set", "distributed.bucket_mb=0.25"],
                           ("launching 2 ranks on the CPU under mpirun", "distributed: 2 ranks over mpi", "2 ranks over mpi (batch per rank)",
                            "of up to 0.25 MiB",
                            "sent while backward ran", "% hidden behind backward"))
        print(out)
        return

    if mode == "early-stop":
        # A margin no validation can beat: the first epoch sets the reference, the next two miss it.
        out = finished_run(base + common + ["--set", "train.epochs=50", "--set", "train.early_stop_patience=2",
                                            "--set", "train.early_stop_min_delta=1000"],
                           ("done: stopped early after epoch 3 of 50",
                            "early stop: val_loss has not improved on", "by more than 1000 for 2 epochs (train.early_stop_patience: 2)",
                            "'s, the best val_loss: "))
        if out.count("epoch 4/50") != 0:
            fail("both ranks should stop after epoch 3", out)
        print(out[-1500:])
        return

    long_run = common + ["--set", "train.epochs=1000", "--set", "logging.every_steps=1", "--set", "checkpoint.every_epochs=0"]
    if mode == "kill-rank":
        launcher = start(base + long_run)
        lines = wait_for_line(launcher, "step ", 120)
        victim = rank_process(launcher.pid, 1)
        if victim is None:
            fail("rank 1's process not found among the launcher's descendants")
        killed_at = time.time()
        os.kill(victim, signal.SIGKILL)
        try:
            rest, _ = launcher.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            launcher.kill()
            fail("the launcher did not end within 60 s of a rank's death")
        seconds = time.time() - killed_at
        out = "".join(lines) + rest
        if launcher.returncode == 0:
            fail("exit 0 after a rank was killed", out)
        if "rank 1 of 2 failed (killed by signal 9" not in out:
            fail("the failed rank is not named", out)
        print(out[-3000:])
        print(f"launcher ended {seconds:.1f} s after rank 1 was killed, exit {launcher.returncode}")
        return

    if mode == "kill-launcher":
        # Quiet ranks: a rank that prints learns of its launcher's death from the broken pipe (mpirun
        # ends the job then); one in a long silent stretch (here an epoch of 2048 slow steps with no
        # report, a minute on a CPU core) must stop all the same, well before it would print again.
        quiet = long_run + ["--set", "data.samples=8192", "--set", "train.batch_size=2", "--set", "model.hidden=[4096,4096]",
                            "--set", "logging.every_steps=10000000"]
        launcher = start(base + quiet)
        wait_for_line(launcher, "distributed: 2 ranks", 120)
        time.sleep(1)
        ranks = [rank_process(launcher.pid, r) for r in (0, 1)]
        if None in ranks:
            fail("the ranks' processes not found among the launcher's descendants")
        launcher.kill()
        launcher.wait()
        killed_at = time.time()
        while time.time() < killed_at + 15 and any(os.path.exists(f"/proc/{pid}") and not zombie(pid) for pid in ranks):
            time.sleep(0.1)
        left = [pid for pid in ranks if os.path.exists(f"/proc/{pid}") and not zombie(pid)]
        if left:
            for pid in left:
                os.kill(pid, signal.SIGKILL)
            fail(f"ranks {left} still run 15 s after their launcher was killed")
        print(f"the ranks stopped {time.time() - killed_at:.1f} s after their launcher was killed")
        again = subprocess.run(base + quiet + ["--set", "train.max_steps=1"], capture_output=True, text=True, timeout=300)
        out = again.stdout + again.stderr
        if "resuming at step" not in out:
            fail("the ranks left no checkpoint to resume from", out)
        print(out[-1500:])
        return

    if mode == "sigterm":
        # 300 steps: seconds of training after the stop (~30 steps/s here), so the resume is quick
        # and the stop, sent at step 3, still comes long before the end.
        launcher = start(base + long_run + ["--set", "train.max_steps=300"])
        lines = wait_for_line(launcher, "step 3/", 120)
        launcher.send_signal(signal.SIGTERM)
        rest, _ = launcher.communicate(timeout=120)
        out = "".join(lines) + rest
        if launcher.returncode != 130:
            fail(f"exit {launcher.returncode} after SIGTERM, expected 130", out)
        if "interrupted after step" not in out:
            fail("no interruption report", out)
        for banner in ("Primary job", "mpirun detected that one or more processes exited", "mpirun noticed"):
            if banner in out:  # mpirun's word on the ranks' 130: the launcher said it already
                fail(f"mpirun's banner {banner!r} after a clean stop", out)
        again = subprocess.run(base + long_run + ["--set", "train.max_steps=300"], capture_output=True, text=True, timeout=300)
        out2 = again.stdout + again.stderr
        if again.returncode != 0 or "resuming at step" not in out2:
            fail(f"the resume failed (exit {again.returncode})", out2)
        print(out[-1500:])
        print(out2[-1500:])
        return
    if mode == "max-time":
        # Shards one sample apart (2047 samples): whether an epoch is over is agreed on, not each
        # rank's own, so the time can end the run on any step without a rank left in a collective.
        timed = long_run + ["--set", "data.samples=2047", "--set", "train.max_time=3s"]
        out = finished_run(base + timed, ("done: stopped at train.max_time 3s after step", "time limit: ", "weights: "))
        if not os.path.exists(os.path.join(workdir, "model.safetensors")):
            fail("no model.safetensors after the time limit", out)
        again = subprocess.run(base + timed, capture_output=True, text=True, timeout=300)
        out2 = again.stdout + again.stderr
        if again.returncode != 0 or "nothing left to train: this run has trained for" not in out2:
            fail(f"the rerun should have nothing left to train (exit {again.returncode})", out2)
        print(out[-1500:])
        return
    if mode == "setup-error":
        for attempt in range(3):  # which rank aborts first varies: each way must read the same
            run = subprocess.run(base + common + ["--set", "data.source=csv", "--set", f"data.path={workdir}/missing.csv",
                                                  "--set", "data.labels=label"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
            out = run.stdout
            if run.returncode != 2:
                fail(f"exit {run.returncode}, expected 2 (a usage error)", out)
            if out.count("missing.csv' does not exist") != 1 or out.count("fix: check data.path") != 1:
                fail("the ranks' identical error should be shown once", out)
            for noise in ("MPI_ABORT was invoked", "ORTE_ERROR_LOG", "help message", "stopping after the current step"):
                if noise in out:
                    fail(f"{noise!r} should not reach the console", out)
            # Both ranks said it (the usual case), or mpirun ended one before it could.
            if "all 2 ranks stopped on the error above (exit code 2)" not in out and \
                    "of 2 failed (exit code 2); mpirun stopped the others" not in out and "the MPI job failed" not in out:
                fail("the launcher's report is missing", out)
        print(out)
        return

    if mode == "uneven-epoch":
        # 257 samples: rank 0's shard is 129, rank 1's 128 = 2 batches of 64. After step 2 rank 1 is
        # through and rank 0 has one sample left: the epoch is over on one rank only.
        uneven = common + ["--set", "data.samples=257", "--set", "train.batch_size=64", "--set", "train.epochs=1",
                           "--set", "checkpoint.every_epochs=0", "--set", "distributed.timeout=20"]
        out = finished_run(base + uneven + ["--set", "train.max_steps=2"], ("done: 2 steps", "weights: "))
        if "epoch 1/1 done" in out:
            fail("epoch 1 is not over on rank 0 (one sample left), so no rank may validate it", out)
        out2 = finished_run(base + uneven + ["--set", "train.max_steps=3"], ("resuming at step 2", "done: "))
        if out2.count("epoch 1/1 done") != 1:
            fail("the resume should finish epoch 1 and validate it once", out2)
        if "val_loss" not in out2:
            fail("epoch 1's validation is missing", out2)
        print(out[-1500:])
        print(out2[-1500:])
        return
    fail("unknown mode " + mode)


if __name__ == "__main__":
    main()
