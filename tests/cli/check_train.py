#!/usr/bin/env python3
"""End-to-end checks of `gputrain train` that need Python's reference readers or signals.

Usage: check_train.py MODE WORKDIR -- GPUTRAIN_TRAIN_COMMAND...
Modes:
  sigterm      SIGTERM mid-run -> exit 130 and a checkpoint; the same command resumes and finishes.
  hangup       a closed terminal or ssh session: the console goes (its pipe's reader closes) and
               SIGHUP comes -> exit 130 and a checkpoint, not a run killed by SIGHUP or SIGPIPE.
  scheduler-signal  SIGUSR1 and SIGUSR2, which schedulers send ahead of a time limit (SLURM's
               --signal), stop the run as SIGTERM does: exit 130 and a checkpoint, not a kill.
  readback     model.safetensors read by `safetensors`, events read by TensorBoard's own reader,
               and init weights written by Python are what C++ starts from.
  torchscript  a module scripted in Python trains, and its weights keep PyTorch's names.
  cpu-cache    the CPU block cache holds freed activations (reserved > allocated in the step
               records), and GPUTRAIN_CPU_CACHE=0 turns it off (reserved == allocated).
  predict      docs/examples/predict.py, given a run's model.safetensors and its validation CSV,
               reproduces the run's own val accuracy (class names, standardised features, layer
               norm, gelu) and val MAE (two standardised targets, a bool column, ';' cells, .csv.gz).
  plateau      scheduler: plateau lowers the learning rate where PyTorch's ReduceLROnPlateau, given
               the run's own validation figures, does: the same rate for every epoch, in both modes,
               down to min_lr.
  evaluate     --evaluate on a run's config.yaml: best.pt gives the figures its epoch had;
               model.safetensors on a test file (data.val_path, the run having held
               data.val_fraction out, standardised) gives what predict.py's probabilities give;
               --json is the only stdout; a missing weights file is exit 2.
  diverge      a loss that turns nan stops the run (exit 1, "training diverged", the fix) before
               it writes a checkpoint of broken weights; with fp16's GradScaler too.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import torch


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def run(command, **kwargs):
    print("+ " + " ".join(command), flush=True)
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


def step_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if '"kind": "step"' in line or '"kind":"step"' in line]


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


def mlp_like_gputrain(features, hidden, outputs):
    # The same layer order as gputrain's mlp (Flatten, Linear, ReLU, ..., Linear): same names.
    layers = [torch.nn.Flatten()]
    width = features
    for h in hidden:
        layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
        width = h
    layers.append(torch.nn.Linear(width, outputs))
    return torch.nn.Sequential(*layers)


def require(*modules):
    """Exits 77 (ctest: skipped) when a reader is missing, e.g. on the offline GPU machine."""
    import importlib.util
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        print("SKIP: Python packages missing: %s (scripts/requirements.txt installs them)" % ", ".join(missing))
        sys.exit(77)


def check_readback(workdir, command):
    require("safetensors", "tensorboard")
    from safetensors.torch import load_file, save_file
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    torch.manual_seed(0)
    init = {k: v.contiguous() for k, v in mlp_like_gputrain(12, [16], 3).state_dict().items()}
    init_path = os.path.join(workdir, "init.safetensors")
    save_file(init, init_path)
    run_dir = os.path.join(workdir, "run")
    # lr 0: the weights must come back exactly as Python wrote them.
    result = run(command + ["--set", "model.name=mlp", "--set", "model.hidden=[16]", "--set", "data.shape=[12]",
                            "--set", "data.classes=3", "--set", "data.samples=64", "--set", "data.val_samples=16",
                            "--set", "train.batch_size=8", "--set", "train.epochs=2", "--set", "optimizer.lr=0",
                            "--set", "model.init_weights=" + init_path, "--set", "logging.every_steps=2",
                            "--set", "logging.dir=" + run_dir, "--set", "device=cpu"])
    print(result.stderr[-1500:])
    if result.returncode != 0:
        fail("train exited %d" % result.returncode)
    weights = load_file(os.path.join(run_dir, "model.safetensors"))
    if sorted(weights) != sorted(init):
        fail("names differ: %s vs %s" % (sorted(weights), sorted(init)))
    for name, tensor in init.items():
        if not torch.equal(weights[name], tensor):
            fail("tensor %s differs from the Python-written initial weights" % name)
    events = EventAccumulator(run_dir)
    events.Reload()
    scalars = events.Tags()["scalars"]
    for tag in ("train/loss", "train/lr", "val/loss", "val/accuracy"):
        if tag not in scalars:
            fail("TensorBoard sees no %s (it sees %s)" % (tag, scalars))
    losses = [(e.step, e.value) for e in events.Scalars("train/loss")]
    expected = [(line["step"], line["loss"]) for line in step_lines(os.path.join(run_dir, "metrics.jsonl"))]
    if [s for s, _ in losses] != [s for s, _ in expected]:
        fail("TensorBoard steps %s differ from metrics.jsonl steps %s" % (losses, expected))
    for (_, a), (_, b) in zip(losses, expected):
        if abs(a - b) > 1e-6 * max(1.0, abs(b)):
            fail("TensorBoard loss %r differs from metrics.jsonl %r" % (a, b))
    print("ok: %d tensors read back by safetensors, %d loss points read by TensorBoard" % (len(weights), len(losses)))


class ScriptedNet(torch.nn.Module):
    def __init__(self, features=12, classes=3):
        super().__init__()
        self.body = torch.nn.Linear(features, 32)
        self.norm = torch.nn.BatchNorm1d(32)
        self.head = torch.nn.Linear(32, classes)

    def forward(self, x):
        return self.head(torch.relu(self.norm(self.body(x.flatten(1)))))


class PrintingNet(ScriptedNet):
    """Prints each batch's shape, as a module under debugging does."""

    def forward(self, x):
        print("batch", x.shape)
        return self.head(torch.relu(self.norm(self.body(x.flatten(1)))))


class ScriptedNetWithFeatures(ScriptedNet):
    """Returns its features beside the logits, as a model scripted for inference often does."""

    def forward(self, x):
        features = torch.relu(self.norm(self.body(x.flatten(1))))
        return self.head(features), features


class DetachingNet(ScriptedNet):
    """Cuts its output off from the weights (.detach()), as code copied from inference does."""

    def forward(self, x):
        return self.head(torch.relu(self.norm(self.body(x.flatten(1))))).detach()


class BatchFollowingNet(ScriptedNet):
    """Gives one logit on odd batches: right on the check's even batch, wrong on a validation of 9."""

    def forward(self, x):
        out = self.head(torch.relu(self.norm(self.body(x.flatten(1)))))
        if x.size(0) % 2 == 1:
            return out[:, :1]
        return out


class RaisingNet(ScriptedNet):
    """Refuses full batches in training, as a module with its own input checks does mid-run."""

    def forward(self, x):
        if self.training and x.size(0) > 8:
            raise ValueError("this module refuses batches over 8")
        return self.head(torch.relu(self.norm(self.body(x.flatten(1)))))


class RaisingInValidationNet(ScriptedNet):
    """Trains, then refuses the validation's full batches."""

    def forward(self, x):
        if not self.training and x.size(0) > 8:
            raise ValueError("this module refuses validation batches over 8")
        return self.head(torch.relu(self.norm(self.body(x.flatten(1)))))


class ReshapingNet(ScriptedNet):
    """Fails in an operation (a view into 5 rows, which 8 samples or fewer skip) on larger
    batches: in training when `in_training`, else in evaluation."""

    def __init__(self, in_training: bool):
        super().__init__()
        self.in_training = in_training

    def forward(self, x):
        h = torch.relu(self.norm(self.body(x.flatten(1))))
        if self.training == self.in_training and x.size(0) > 8:
            h = h.view(5, -1)
        return self.head(h)


def check_torchscript(workdir, command):
    require("safetensors")
    from safetensors.torch import load_file

    path = os.path.join(workdir, "scripted.pt")
    module = torch.jit.script(ScriptedNet())
    module.save(path)
    run_dir = os.path.join(workdir, "run")
    result = run(command + ["--set", "model.torchscript=" + path, "--set", "data.shape=[12]", "--set", "data.classes=3",
                            "--set", "data.samples=256", "--set", "data.val_samples=64", "--set", "train.epochs=3",
                            "--set", "train.batch_size=32", "--set", "optimizer.lr=0.01",
                            "--set", "logging.dir=" + run_dir, "--set", "device=cpu"])
    print(result.stderr[-1500:])
    if result.returncode != 0:
        fail("train exited %d" % result.returncode)
    weights = load_file(os.path.join(run_dir, "model.safetensors"))
    expected = set(ScriptedNet().state_dict().keys())
    if set(weights) != expected:
        fail("names differ: %s vs %s" % (sorted(weights), sorted(expected)))
    epochs = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl")) if '"kind":"epoch"' in l]
    if not epochs[-1]["train_loss"] < epochs[0]["train_loss"]:
        fail("the scripted model did not learn: %s" % epochs)
    print("ok: TorchScript module trained, loss %.4f -> %.4f" % (epochs[0]["train_loss"], epochs[-1]["train_loss"]))

    # A module that does not fit the data is refused before the run starts (exit 2), saying why.
    for name, net, expected in [
            ("wrong-input", ScriptedNet(13, 3), "cannot take this data's samples, shaped [12]"),
            ("wrong-output", ScriptedNet(12, 2), "gives [2, 2] for a batch of 2 samples shaped [12]"),
            ("tuple-output", ScriptedNetWithFeatures(), "returns a tuple of 2 values, not one tensor of [batch, outputs]"),
            ("detached-output", DetachingNet(), "gives an output that no parameter that trains leads to"),
            ("batch-following-output", BatchFollowingNet(), "gives [3, 1] for a batch of 3 samples shaped [12] (synthetic")]:
        path = os.path.join(workdir, name + ".pt")
        torch.jit.script(net).save(path)
        run_dir = os.path.join(workdir, name)
        result = run(command + ["--set", "model.torchscript=" + path, "--set", "data.shape=[12]", "--set", "data.classes=3",
                                "--set", "logging.dir=" + run_dir, "--set", "device=cpu"])
        if result.returncode != 2 or expected not in result.stderr or "fix:" not in result.stderr:
            fail("%s: expected exit 2 and '%s', got %d:\n%s" % (name, expected, result.returncode, result.stderr[-1500:]))
        if os.path.exists(os.path.join(run_dir, "metrics.jsonl")):
            fail("%s: the run started before the mismatch was found" % name)
        print("ok: %s refused: %s" % (name, result.stderr.strip().splitlines()[0]))

    # A head wider than the data's classes (a pretrained one) trains; its picks past them are wrong
    # predictions of no class in validation (they once indexed past the per-class sums).
    wide = ScriptedNet(12, 5)
    with torch.no_grad():
        wide.head.bias[3:] = 50.0  # every sample's pick is an extra logit
    path = os.path.join(workdir, "wide-head.pt")
    torch.jit.script(wide).save(path)
    run_dir = os.path.join(workdir, "wide-head")
    result = run(command + ["--set", "model.torchscript=" + path, "--set", "data.shape=[12]", "--set", "data.classes=3",
                            "--set", "data.samples=64", "--set", "data.val_samples=32", "--set", "train.epochs=1",
                            "--set", "optimizer.lr=1e-6", "--set", "logging.dir=" + run_dir, "--set", "device=cpu"])
    epochs = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl")) if '"kind":"epoch"' in l] if result.returncode == 0 else []
    if not epochs or epochs[-1]["val_accuracy"] != 0 or sum(epochs[-1]["val_class_predicted"]) != 0:
        fail("a head of 5 logits for 3 classes: exit %d, epochs %s:\n%s" % (result.returncode, epochs, result.stderr[-1500:]))
    print("ok: a head wider than the classes trains, its extra picks counted wrong")

    # A module's print() goes to stderr with gputrain's lines: stdout keeps --evaluate --json's object alone.
    path = os.path.join(workdir, "printing.pt")
    torch.jit.script(PrintingNet()).save(path)
    args = command + ["--set", "model.torchscript=" + path, "--set", "data.shape=[12]", "--set", "data.classes=3",
                      "--set", "logging.dir=" + os.path.join(workdir, "printing"), "--set", "device=cpu"]
    result = run(args + ["--evaluate", os.path.join(workdir, "run", "model.safetensors"), "--json"])
    try:
        figures = json.loads(result.stdout)
    except ValueError:
        figures = None
    if result.returncode != 0 or not figures or "batch" not in result.stderr:
        fail("a printing module under --evaluate --json: exit %d, stdout %r" % (result.returncode, result.stdout[:300]))
    print("ok: a module's print() leaves --json's stdout alone")

    # A module that raises mid-run: its class and message with the step and a fix (exit 1), not the
    # interpreter's tracebacks, which go to training.log.
    path = os.path.join(workdir, "raising.pt")
    torch.jit.script(RaisingNet()).save(path)
    run_dir = os.path.join(workdir, "raising")
    result = run(command + ["--set", "model.torchscript=" + path, "--set", "data.shape=[12]", "--set", "data.classes=3",
                            "--set", "train.batch_size=16", "--set", "logging.dir=" + run_dir, "--set", "device=cpu"])
    said = "step 1 failed: model.torchscript (" + path + ") raised ValueError: this module refuses batches over 8"
    if result.returncode != 1 or said not in result.stderr or "Traceback" in result.stderr or "fix: the module's forward" not in result.stderr:
        fail("a raising module: exit %d:\n%s" % (result.returncode, result.stderr[-1500:]))
    with open(os.path.join(run_dir, "training.log")) as log:
        if "Traceback of TorchScript" not in log.read():
            fail("training.log lacks the module's traceback")
    print("ok: a module that raises is named with its step and message")

    # One that raises in validation is named with the validation, not with the next step.
    path = os.path.join(workdir, "raising-in-validation.pt")
    torch.jit.script(RaisingInValidationNet()).save(path)
    result = run(command + ["--set", "model.torchscript=" + path, "--set", "data.shape=[12]", "--set", "data.classes=3",
                            "--set", "data.samples=64", "--set", "train.batch_size=16", "--set", "device=cpu",
                            "--set", "logging.dir=" + os.path.join(workdir, "raising-in-validation")])
    said = "validation after epoch 1 failed: model.torchscript (" + path + ") raised ValueError: this module refuses validation"
    if result.returncode != 1 or said not in result.stderr:
        fail("a module raising in validation: exit %d:\n%s" % (result.returncode, result.stderr[-1500:]))
    print("ok: a module that raises in validation is named with the validation")

    # A module whose operation fails mid-run: the operation's message and the module's line with
    # what failed (exit 1), in training and in --evaluate; the tracebacks only in training.log.
    for in_training, part in [(True, "step 1"), (False, "the evaluation")]:
        path = os.path.join(workdir, "reshaping-%s.pt" % in_training)
        torch.jit.script(ReshapingNet(in_training)).save(path)
        run_dir = os.path.join(workdir, "reshaping-%s" % in_training)
        args = command + ["--set", "model.torchscript=" + path, "--set", "data.shape=[12]", "--set", "data.classes=3",
                          "--set", "train.batch_size=16", "--set", "logging.dir=" + run_dir, "--set", "device=cpu"]
        if not in_training:
            args += ["--evaluate", os.path.join(workdir, "run", "model.safetensors")]
        result = run(args)
        said = part + " failed in model.torchscript (" + path + "): RuntimeError: shape '[5, -1]' is invalid for input of size"
        if (result.returncode != 1 or said not in result.stderr or "in forward: h = h.view(5, -1)" not in result.stderr
                or "Traceback" in result.stderr or "fix: the module's forward failed on that batch" not in result.stderr):
            fail("a module whose operation fails (%s): exit %d:\n%s" % (part, result.returncode, result.stderr[-1500:]))
        if in_training:
            with open(os.path.join(run_dir, "training.log")) as log:
                if "Traceback of TorchScript" not in log.read():
                    fail("training.log lacks the failed operation's traceback")
    print("ok: a module whose operation fails is named with the step, the message and its line")


def check_cpu_cache(workdir, command):
    def reserved_minus_allocated(name, env):
        run_dir = os.path.join(workdir, name)
        args = command + ["--set", "logging.dir=" + run_dir, "--set", "logging.every_steps=1", "--set", "train.max_steps=6",
                          "--set", "checkpoint.resume=never", "--set", "device=cpu"]
        result = run(args, env=dict(os.environ, **env))
        if result.returncode != 0:
            fail("train exited %d:\n%s" % (result.returncode, result.stderr))
        steps = step_lines(os.path.join(run_dir, "metrics.jsonl"))
        if len(steps) != 6:
            fail("%s: expected 6 step records, found %d" % (name, len(steps)))
        return [s["memory_reserved"] - s["memory_allocated"] for s in steps]

    cached = reserved_minus_allocated("cache-on", {})
    if max(cached) <= 0:
        fail("with the cache on, no step reported cached bytes (reserved - allocated: %s)" % cached)
    off = reserved_minus_allocated("cache-off", {"GPUTRAIN_CPU_CACHE": "0"})
    if any(d != 0 for d in off):
        fail("GPUTRAIN_CPU_CACHE=0 still cached bytes (reserved - allocated: %s)" % off)
    print("ok: cached after each step %s; none with GPUTRAIN_CPU_CACHE=0" % cached)


def check_diverge(workdir, command):
    for precision in ("fp32", "fp16-mixed"):
        run_dir = os.path.join(workdir, precision)
        # lr 1e6 blows the weights up within a few steps; a checkpoint every 2 steps and a report
        # every 3 put checkpoints both before and after the first nan.
        result = run(command + ["--set", "logging.dir=" + run_dir, "--set", "optimizer.lr=1e6", "--set", "train.precision=" + precision,
                                "--set", "checkpoint.every_steps=2", "--set", "logging.every_steps=3", "--set", "checkpoint.resume=never",
                                "--set", "device=cpu"])
        print(result.stderr[-800:])
        if result.returncode != 1:
            fail("%s: expected exit 1 for a diverged run, got %d" % (precision, result.returncode))
        if "training diverged: the loss is" not in result.stderr or "fix: lower optimizer.lr" not in result.stderr:
            fail("%s: stderr does not say the training diverged and how to fix it" % precision)
        folder = os.path.join(run_dir, "checkpoints")
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            # Checkpoints are dicts torch.load opens (docs/checkpoints.md): the weights under "model".
            state = torch.load(os.path.join(folder, name), weights_only=True)["model"]
            floats = [t for t in state.values() if t.is_floating_point()]
            if not floats:
                fail("%s: checkpoint %s holds no model tensors: %s" % (precision, name, list(state)[:5]))
            if not all(torch.isfinite(t).all() for t in floats):
                fail("%s: checkpoint %s holds nan/inf values" % (precision, name))
        print("ok: %s stops with exit 1; every checkpoint written is finite" % precision)


def check_plateau(workdir, command):
    # Two runs whose validation figure stalls often, both watched in max mode: val_loss with
    # best_mode max (it mostly falls, so most epochs are "not better"), and val_accuracy.
    cases = {"loss-max": ["--set", "checkpoint.best_metric=val_loss", "--set", "checkpoint.best_mode=max", "--set", "scheduler.patience=1",
                          "--set", "scheduler.gamma=0.5", "--set", "scheduler.min_lr=0.002", "--set", "optimizer.lr=0.01"],
             "accuracy": ["--set", "checkpoint.best_metric=val_accuracy", "--set", "scheduler.patience=0", "--set", "scheduler.gamma=0.3",
                          "--set", "optimizer.lr=0.05"]}
    for name, settings in cases.items():
        run_dir = os.path.join(workdir, name)
        result = run(command + ["--set", "logging.dir=" + run_dir, "--set", "scheduler.name=plateau", "--set", "train.epochs=8",
                                "--set", "data.samples=512", "--set", "data.val_samples=256", "--set", "train.batch_size=64",
                                "--set", "logging.every_steps=1", "--set", "logging.progress=lines", "--set", "device=cpu"] + settings)
        if result.returncode != 0:
            fail(f"{name}: training exited {result.returncode}:\n{result.stdout}{result.stderr}")
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            records = [json.loads(line) for line in f]
        epochs = [r for r in records if r["kind"] == "epoch"]
        steps = [r for r in records if r["kind"] == "step"]
        per_epoch = len(steps) // len(epochs)
        metric = settings[1].split("=")[1]
        config = {s.split("=")[0]: s.split("=")[1] for s in settings[1::2]}
        lr = float(config["optimizer.lr"])
        optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode="max", factor=float(config["scheduler.gamma"]), patience=int(config["scheduler.patience"]),
            threshold=0, cooldown=0, min_lr=float(config.get("scheduler.min_lr", 0)))
        decays = 0
        for e, epoch in enumerate(epochs[:-1]):
            scheduler.step(epoch[metric])
            expected = optimizer.param_groups[0]["lr"]
            ours = steps[(e + 1) * per_epoch]["lr"]
            if abs(ours - expected) > 1e-12 * expected:
                fail(f"{name}: epoch {e + 2} trains at lr {ours}; ReduceLROnPlateau gives {expected} after {[r[metric] for r in epochs[:e + 1]]}")
            decays += expected < lr
            lr = expected
        if decays == 0:
            fail(f"{name}: no decay in {len(epochs)} epochs; the comparison saw nothing")
        if "learning rate " not in result.stdout + result.stderr:
            fail(f"{name}: the run did not say when it lowered the learning rate:\n{result.stderr}")
        print(f"{name}: every epoch's lr is ReduceLROnPlateau's ({decays} decays, last {lr:g})")


def check_predict(workdir, command):
    import csv
    import numpy as np

    predict = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "examples", "predict.py")
    rng = np.random.default_rng(0)

    def write(path, header, rows, delimiter=","):
        with open(path, "w", newline="") as f:
            w = csv.writer(f, delimiter=delimiter)
            w.writerow(header)
            w.writerows(rows)

    def last_epoch(run_dir):
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            return [json.loads(line) for line in f if '"kind":"epoch"' in line][-1]

    def train_and_predict(name, train_rows, val_rows, header, settings, delimiter=",", gzip_val=False):
        paths = {part: os.path.join(workdir, f"{name}-{part}.csv") for part in ("train", "val")}
        write(paths["train"], header, train_rows, delimiter)
        write(paths["val"], header, val_rows, delimiter)
        if gzip_val:  # as pandas' to_csv("x.csv.gz") writes it
            import gzip
            with open(paths["val"], "rb") as plain, gzip.open(paths["val"] + ".gz", "wb") as packed:
                packed.write(plain.read())
            paths["val"] += ".gz"
        run_dir = os.path.join(workdir, name)
        result = run(command + ["--set", "data.source=csv", "--set", "data.path=" + paths["train"], "--set", "data.val_path=" + paths["val"],
                                "--set", "logging.dir=" + run_dir, "--set", "train.epochs=3", "--set", "logging.progress=lines"] + settings)
        if result.returncode != 0:
            fail(f"{name}: training exited {result.returncode}:\n{result.stdout}{result.stderr}")
        predicted = run([sys.executable, predict, os.path.join(run_dir, "model.safetensors"), paths["val"]])
        if predicted.returncode != 0:
            fail(f"{name}: predict.py exited {predicted.returncode}:\n{predicted.stdout}{predicted.stderr}")
        return list(csv.reader(predicted.stdout.splitlines())), last_epoch(run_dir), result.stdout + result.stderr

    # Classification by class name, an id column left out, standardised features of mixed scale.
    def flower(i):
        kind = i % 3
        return [1000 + i, 150 * kind + rng.normal(0, 40), kind + rng.normal(0, 0.8), ["iris", "lily", "rose"][kind]]
    rows = [flower(i) for i in range(600)]
    header = ["id", "height_mm", "petals", "species"]
    table, epoch, _ = train_and_predict("classes", rows[:480], rows[480:], header,
                                     ["--set", "data.labels=species", "--set", "data.exclude=[id]", "--set", "data.standardize=true",
                                      "--set", "model.name=mlp", "--set", "model.hidden=[32, 16]", "--set", "model.norm=layer",
                                      "--set", "model.activation=gelu"])
    if table[0] != ["class", "p(iris)", "p(lily)", "p(rose)"]:
        fail(f"classes: predict.py's header is {table[0]}")
    # The probabilities: each row's add up to 1, name the class, and give the run's val loss.
    probabilities = np.array([[float(p) for p in row[1:]] for row in table[1:]])
    if np.abs(probabilities.sum(axis=1) - 1).max() > 1e-5 or any(table[0][1 + k] != f"p({row[0]})" for k, row in zip(probabilities.argmax(axis=1), table[1:])):
        fail("classes: predict.py's probabilities do not add up to 1 or do not name its class")
    truths = [["iris", "lily", "rose"].index(truth[3]) for truth in rows[480:]]
    loss = -np.mean(np.log(probabilities[np.arange(len(truths)), truths]))
    if abs(loss - epoch["val_loss"]) > 1e-4 * epoch["val_loss"]:
        fail(f"classes: predict.py's probabilities give a loss of {loss}; the run's val loss {epoch['val_loss']}")
    accuracy = np.mean([row[0] == truth[3] for row, truth in zip(table[1:], rows[480:])])
    if len(table) != 121 or abs(accuracy - epoch["val_accuracy"]) > 1e-9:
        fail(f"classes: predict.py's accuracy {accuracy} over {len(table) - 1} rows; the run's val accuracy {epoch['val_accuracy']}")
    print(f"classes: predict.py's accuracy {accuracy:.4f} is the run's val accuracy, its probabilities' loss {loss:.4f} the val loss")

    # Regression of two targets far from unit scale, standardised, a bool feature, ';' between cells.
    def house(_):
        sqm, new = rng.uniform(40, 250), rng.random() < 0.3
        return [round(sqm, 1), "True" if new else "False", round(3000 * sqm + 50000 * new + rng.normal(0, 20000)),
                round(sqm / 20 + rng.normal(0, 1), 2)]
    rows = [house(i) for i in range(500)]
    table, epoch, _ = train_and_predict("targets", rows[:400], rows[400:], ["sqm", "new", "price", "rooms"],
                                     ["--set", "data.task=regression", "--set", "data.labels=[price, rooms]", "--set", "data.standardize=true",
                                      "--set", "data.standardize_targets=true", "--set", "model.name=mlp", "--set", "model.hidden=[32]"], ";",
                                     gzip_val=True)
    if table[0] != ["price", "rooms"]:
        fail(f"targets: predict.py's header is {table[0]}")
    errors = np.array([[float(p) - float(t) for p, t in zip(row, truth[2:])] for row, truth in zip(table[1:], rows[400:])])
    mae = np.abs(errors).mean()
    if abs(mae - epoch["val_mae"]) > 1e-4 * epoch["val_mae"]:
        fail(f"targets: predict.py's MAE {mae}; the run's val MAE {epoch['val_mae']}")
    print(f"targets: predict.py's MAE {mae:.2f} is the run's val MAE {epoch['val_mae']:.2f}")

    # Columns of categories one-hot encoded (data.categorical): text, and numbers as categories
    # ("10" after "2"); in the validation file a missing cell and a category the training file lacks.
    def pet(i):
        colour, grade = ["red", "green", "blue"][i % 3], ["1", "2", "10"][(i // 3) % 3]
        return [colour, grade, round(rng.normal(), 3), int((colour == "red") != (grade == "10"))]
    rows = [pet(i) for i in range(540)]
    rows[500][0], rows[501][0] = "", "purple"
    table, epoch, _ = train_and_predict("categories", rows[:450], rows[450:], ["colour", "grade", "noise", "label"],
                                     ["--set", "data.labels=label", "--set", "data.categorical=[colour, grade]",
                                      "--set", "model.name=mlp", "--set", "model.hidden=[32]", "--set", "optimizer.lr=0.01"])
    with open(os.path.join(workdir, "categories", "model.safetensors"), "rb") as f:  # the header: its length, then JSON
        meta = json.loads(f.read(int.from_bytes(f.read(8), "little")))["__metadata__"]
    if json.loads(meta["data.categories"]) != {"colour": ["blue", "green", "red"], "grade": ["1", "2", "10"]}:
        fail(f"categories: the weights' data.categories is {meta['data.categories']}")
    accuracy = np.mean([int(row[0]) == truth[3] for row, truth in zip(table[1:], rows[450:])])
    if len(table) != 91 or abs(accuracy - epoch["val_accuracy"]) > 1e-9 or accuracy < 0.8:  # chance: 0.56
        fail(f"categories: predict.py's accuracy {accuracy} over {len(table) - 1} rows; the run's val accuracy {epoch['val_accuracy']}")
    print(f"categories: predict.py's accuracy {accuracy:.4f} is the run's val accuracy")

    # Unbalanced classes (10 % churn) weighed by train.class_weights: balanced, best.pt kept by the
    # balanced accuracy, which predict.py's predictions give again: each class's recall, averaged.
    def customer(i):
        churn = i % 10 == 0
        return [round(rng.normal(1.5 if churn else 0, 1), 3), round(rng.normal(), 3), "churn" if churn else "stay"]
    rows = [customer(i) for i in range(1000)]
    table, epoch, output = train_and_predict("unbalanced", rows[:800], rows[800:], ["usage", "noise", "outcome"],
                                             ["--set", "data.labels=outcome", "--set", "train.class_weights=balanced",
                                              "--set", "checkpoint.best_metric=val_balanced_accuracy", "--set", "model.name=mlp",
                                              "--set", "model.hidden=[16]", "--set", "optimizer.lr=0.01"])
    right = {name: sum(row[0] == truth[2] for row, truth in zip(table[1:], rows[800:]) if truth[2] == name) for name in ("churn", "stay")}
    recalls = {name: right[name] / sum(truth[2] == name for truth in rows[800:]) for name in right}
    answers = {name: sum(row[0] == name for row in table[1:]) for name in right}
    balanced = np.mean(list(recalls.values()))
    if len(table) != 201 or abs(balanced - epoch["val_balanced_accuracy"]) > 1e-9:
        fail(f"unbalanced: predict.py's balanced accuracy {balanced} over {len(table) - 1} rows; the run's {epoch['val_balanced_accuracy']}")
    if recalls["churn"] < 0.5:  # unweighted, the model hardly ever answers churn
        fail(f"unbalanced: with balanced class weights, only {recalls['churn']:.2f} of the churned customers are found")
    for expected in ("class weights (train.class_weights: balanced, from the training labels' counts): 'churn' 5, 'stay' 0.556",
                     "% (balanced " + format(100 * epoch["val_balanced_accuracy"], ".2f") + "%)",
                     f"val per class after epoch 3: 'churn' {right['churn']} of 20 found (recall {100 * recalls['churn']:.1f} %), "
                     f"{right['churn']} of {answers['churn']} predictions right (precision {100 * right['churn'] / answers['churn']:.1f} %); "
                     f"'stay' {right['stay']} of 180 found (recall {100 * recalls['stay']:.1f} %), "
                     f"{right['stay']} of {answers['stay']} predictions right (precision {100 * right['stay'] / answers['stay']:.1f} %)"):
        if expected not in output:
            fail(f"unbalanced: the run did not say '{expected}':\n{output}")
    print(f"unbalanced: predict.py's balanced accuracy {balanced:.4f} is the run's; churn recall {recalls['churn']:.2f}")


def check_evaluate(workdir, command):
    import csv
    import numpy as np

    predict = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "examples", "predict.py")
    rng = np.random.default_rng(1)

    def customer(i):
        churn = i % 4 == 0
        noise = round(rng.normal(), 3)
        # Every 7th row misses its noise value: data.missing mean fills it with the training rows'
        # mean, which model.safetensors records for predict.py.
        return [round(50 + 30 * rng.normal(2.5 if churn else 0, 1), 2), "" if i % 7 == 3 else noise, "churn" if churn else "stay"]
    paths = {}
    for part, count in (("train", 800), ("test", 240)):
        paths[part] = os.path.join(workdir, part + ".csv")
        with open(paths[part], "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["spend", "noise", "outcome"])
            w.writerows(customer(i) for i in range(count))
    run_dir = os.path.join(workdir, "run")
    trained = run(command + ["--set", "data.source=csv", "--set", "data.path=" + paths["train"], "--set", "data.labels=outcome",
                             "--set", "data.val_fraction=0.25", "--set", "data.standardize=true", "--set", "data.missing=mean",
                             "--set", "model.name=mlp",
                             "--set", "model.hidden=[16]", "--set", "train.epochs=4", "--set", "optimizer.lr=0.01",
                             "--set", "checkpoint.best_metric=val_accuracy",
                             "--set", "logging.dir=" + run_dir])
    if trained.returncode != 0:
        fail(f"training exited {trained.returncode}:\n{trained.stdout}{trained.stderr}")
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        epochs = [json.loads(line) for line in f if '"kind":"epoch"' in line]
    config = os.path.join(run_dir, "config.yaml")
    before = sorted(os.listdir(run_dir))

    def evaluate(weights, *settings):
        result = run(command[:1] + ["train", config, "--evaluate", weights, "--json"] + list(settings))
        if result.returncode != 0:
            fail(f"--evaluate {weights} exited {result.returncode}:\n{result.stdout}{result.stderr}")
        try:
            return json.loads(result.stdout), result.stderr
        except json.JSONDecodeError:
            fail(f"--evaluate --json printed more than one JSON object on stdout:\n{result.stdout}")

    # best.pt: the epoch with the best val accuracy, and its figures.
    figures, said = evaluate(os.path.join(run_dir, "checkpoints", "best.pt"))
    if figures.get("schema") != "gputrain.evaluation/1":
        fail(f"--evaluate --json: schema {figures.get('schema')!r}, not gputrain.evaluation/1")
    best = max(range(len(epochs)), key=lambda e: (epochs[e]["val_accuracy"], -e))
    if figures["checkpoint_epochs_done"] != best + 1 or figures["samples"] != 200:
        fail(f"best.pt: evaluated as epoch {figures['checkpoint_epochs_done']} on {figures['samples']} samples; its run's best "
             f"epoch is {best + 1} of 200 held-out samples")
    for key in ("val_accuracy", "val_balanced_accuracy"):
        if figures[key] != epochs[best][key]:
            fail(f"best.pt: {key} {figures[key]}; its epoch had {epochs[best][key]}")
    if abs(figures["val_loss"] - epochs[best]["val_loss"]) > 1e-9:
        fail(f"best.pt: val_loss {figures['val_loss']}; its epoch had {epochs[best]['val_loss']}")
    if "val loss" not in said or "per class: 'churn'" not in said:
        fail(f"best.pt: the lines on stderr lack the figures or the per-class line:\n{said}")
    print(f"best.pt: epoch {best + 1}'s figures again (val accuracy {figures['val_accuracy']:.4f})")

    # The test file, by a model the run standardised on its 600 training rows: predict.py applies the
    # weights file's own mean and std, so the two agree only if the evaluation kept those rows.
    figures, _ = evaluate(os.path.join(run_dir, "model.safetensors"), "--set", "data.val_path=" + paths["test"])
    predicted = run([sys.executable, predict, os.path.join(run_dir, "model.safetensors"), paths["test"]])
    if predicted.returncode != 0:
        fail(f"predict.py exited {predicted.returncode}:\n{predicted.stdout}{predicted.stderr}")
    table = list(csv.reader(predicted.stdout.splitlines()))
    with open(paths["test"]) as f:
        truths = [row[2] for row in list(csv.reader(f))[1:]]
    names = [column[2:-1] for column in table[0][1:]]
    probabilities = np.array([[float(p) for p in row[1:]] for row in table[1:]])
    loss = -np.mean(np.log(probabilities[np.arange(len(truths)), [names.index(t) for t in truths]]))
    accuracy = np.mean([row[0] == t for row, t in zip(table[1:], truths)])
    if figures["samples"] != 240 or abs(figures["val_accuracy"] - accuracy) > 1e-9 or abs(figures["val_loss"] - loss) > 1e-4 * loss:
        fail(f"test.csv: evaluated accuracy {figures['val_accuracy']}, loss {figures['val_loss']} on {figures['samples']} rows; "
             f"predict.py's give {accuracy}, {loss} on {len(truths)}")
    churn = next(c for c in figures["classes"] if c["name"] == "churn")
    found = sum(row[0] == "churn" and t == "churn" for row, t in zip(table[1:], truths))
    if churn["samples"] != truths.count("churn") or churn["right"] != found:
        fail(f"test.csv: churn {churn}; predict.py finds {found} of {truths.count('churn')}")
    print(f"test.csv: accuracy {accuracy:.4f} and loss {loss:.4f}, as predict.py's probabilities give")

    if sorted(os.listdir(run_dir)) != before:
        fail(f"the run folder changed: {before} -> {sorted(os.listdir(run_dir))}")
    missing = run(command[:1] + ["train", config, "--evaluate", os.path.join(run_dir, "no-such.pt")])
    if missing.returncode != 2 or "does not exist" not in missing.stderr:
        fail(f"a missing weights file: exit {missing.returncode}:\n{missing.stderr}")
    # With ranks to start, the file is checked before any starts: one error, not one per rank.
    ranks = run(command[:1] + ["train", config, "--evaluate", os.path.join(run_dir, "no-such.pt"), "--set", "device=cpu",
                               "--nproc-per-node", "2"])
    if ranks.returncode != 2 or ranks.stderr.count("does not exist") != 1 or "launching" in ranks.stderr:
        fail(f"a missing weights file with --nproc-per-node 2: exit {ranks.returncode}:\n{ranks.stderr}")
    print("nothing written; a missing weights file is exit 2, said once before ranks start")


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        fail(__doc__)
    mode, workdir, command = sys.argv[1], sys.argv[2], sys.argv[4:]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    modes = {"sigterm": check_sigterm, "hangup": check_hangup, "scheduler-signal": check_scheduler_signal,
             "readback": check_readback, "torchscript": check_torchscript, "cpu-cache": check_cpu_cache,
             "diverge": check_diverge, "predict": check_predict, "plateau": check_plateau,
             "evaluate": check_evaluate}
    modes[mode](workdir, command)


if __name__ == "__main__":
    main()
