"""check_train.py's signal modes: SIGTERM, a closed terminal (SIGHUP) and a scheduler's SIGUSR1/2 stop a
run with exit 130 and a checkpoint, and the same command resumes it."""
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail, run, step_lines  # noqa: E402


def wait_for_steps(process, run_dir, count, what="the run", deadline_seconds=120):
    """Waits until metrics.jsonl in run_dir holds `count` step records; fails if the run ends first."""
    deadline = time.time() + deadline_seconds
    while len(step_lines(os.path.join(run_dir, "metrics.jsonl"))) < count:
        if process.poll() is not None or time.time() > deadline:
            err = process.communicate()[1] or ""
            fail("%s ended or stalled before %d steps: %s" % (what, count, (err.decode() if isinstance(err, bytes) else err)[-2000:]))
        time.sleep(0.05)


def check_hangup(workdir, command):
    run_dir = os.path.join(workdir, "run")
    args = command + ["--set", "logging.dir=" + run_dir, "--set", "logging.every_steps=1",
                      "--set", "train.epochs=50", "--set", "data.samples=4096"]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_steps(process, run_dir, 3)
    # As `| tee` dies with the session: every later console write meets a pipe with no reader.
    process.stdout.close()
    process.stderr.close()
    process.send_signal(signal.SIGHUP)
    code = process.wait(timeout=120)
    if code != 130:
        fail("expected exit 130 after the hang-up, got %d (negative: killed by that signal)" % code)
    checkpoints = [f for f in os.listdir(os.path.join(run_dir, "checkpoints")) if f.startswith("step-")]
    if not checkpoints:
        fail("no checkpoint after the hang-up")
    with open(os.path.join(run_dir, "training.log")) as f:
        if "interrupted after step" not in f.read():
            fail("training.log does not say the run was interrupted")
    print("ok: a hang-up with the console gone -> exit 130 and %s" % sorted(checkpoints)[-1])

    # Under nohup (SIGHUP ignored), a hang-up is not a stop: the run goes on, as nohup promises.
    shutil.rmtree(run_dir)
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    wait_for_steps(process, run_dir, 3, "the nohup run")
    process.send_signal(signal.SIGHUP)
    steps_then = len(step_lines(os.path.join(run_dir, "metrics.jsonl")))
    time.sleep(1.0)
    if process.poll() is not None:
        fail("a hang-up under nohup stopped the run (exit %d)" % process.returncode)
    if len(step_lines(os.path.join(run_dir, "metrics.jsonl"))) <= steps_then:
        fail("the run under nohup stopped training after the hang-up")
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    if process.returncode != 130:
        fail("the nohup run did not stop on SIGTERM with 130: %d %s" % (process.returncode, err[-1000:]))
    print("ok: under nohup a hang-up leaves the run training")


def check_scheduler_signal(workdir, command):
    for sig in (signal.SIGUSR1, signal.SIGUSR2):
        run_dir = os.path.join(workdir, sig.name)
        args = command + ["--set", "logging.dir=" + run_dir, "--set", "logging.every_steps=1",
                          "--set", "train.epochs=50", "--set", "data.samples=4096"]
        process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_steps(process, run_dir, 3)
        process.send_signal(sig)
        _, err = process.communicate(timeout=120)
        if process.returncode != 130:
            fail("expected exit 130 after %s, got %d (negative: killed by that signal)\n%s" % (sig.name, process.returncode, err[-1500:]))
        checkpoints = [f for f in os.listdir(os.path.join(run_dir, "checkpoints")) if f.startswith("step-")]
        if not checkpoints or "interrupted after step" not in err:
            fail("no checkpoint, or no 'interrupted after step', after %s:\n%s" % (sig.name, err[-1500:]))
        print("ok: %s (a scheduler's warning) -> exit 130 and %s" % (sig.name, sorted(checkpoints)[-1]))


def check_sigterm(workdir, command):
    run_dir = os.path.join(workdir, "run")
    args = command + ["--set", "logging.dir=" + run_dir, "--set", "logging.every_steps=1",
                      "--set", "train.epochs=50", "--set", "data.samples=4096"]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_steps(process, run_dir, 3)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    print(err[-1500:])
    if process.returncode != 130:
        fail("expected exit 130 after SIGTERM, got %d" % process.returncode)
    checkpoints = [f for f in os.listdir(os.path.join(run_dir, "checkpoints")) if f.startswith("step-")]
    if not checkpoints:
        fail("no checkpoint after SIGTERM")
    stopped_at = int(sorted(checkpoints)[-1][5:13])
    if "interrupted" not in err:
        fail("stderr does not say the run was interrupted")
    # Resume, shortened so the test stays quick: same run dir, fewer epochs.
    resumed = run(args + ["--set", "train.max_steps=%d" % (stopped_at + 3)])
    print(resumed.stderr[-1500:])
    if resumed.returncode != 0:
        fail("resume exited %d" % resumed.returncode)
    if "resuming at step %d" % stopped_at not in resumed.stderr:
        fail("the second run did not resume at step %d" % stopped_at)
    print("ok: SIGTERM at step %d -> exit 130, checkpoint, resumed and finished" % stopped_at)
    # The same command once more: the run has finished, so it says so and how to train again.
    again = run(args + ["--set", "train.max_steps=%d" % (stopped_at + 3)])
    if again.returncode != 0 or "nothing left to train" not in again.stderr:
        fail("a finished run started again should exit 0 and say there is nothing left to train:\n" + again.stderr[-1500:])

    # Two signals in a row: the second one exits at once (still 130), without waiting for the step.
    # Large steps (~1 s) leave time to send the second signal while the first step still runs
    # (two signals sent at once would merge into one pending signal).
    process = subprocess.Popen(args + ["--set", "logging.dir=" + run_dir + "-twice", "--set", "train.batch_size=1024",
                                       "--set", "model.width=64"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_steps(process, run_dir + "-twice", 2, "the second run", deadline_seconds=240)
    process.send_signal(signal.SIGINT)
    time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    if process.returncode != 130 or "second signal" not in err:
        fail("two signals: expected exit 130 and 'second signal', got %d: %s" % (process.returncode, err[-800:]))
    print("ok: a second signal exits at once with 130")
