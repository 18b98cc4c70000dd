"""check_train.py's torchscript mode: modules scripted in Python train under their own names, and
the modules a run cannot train (cut off from their weights, shaped by the batch, raising) are named."""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail, require, run  # noqa: E402


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
