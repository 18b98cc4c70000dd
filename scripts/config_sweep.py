#!/usr/bin/env python3
"""Runs gputrain on random combinations of settings that each pass alone, and keeps every run
that ends as no run should (docs/fuzzing.md, "Sweeping settings"):

- a crash (a signal) or a hang (no end in 120 s);
- an exit code other than 0, 1, 2, 3;
- words of a bug: ours ("report it", the fix of an error we could not explain), LibTorch's
  ("Exception raised from": a backtrace), the C++ runtime's ("terminate called", "what():");
- an error without a `fix:` line.

The fuzz targets feed each reader bytes; this feeds whole commands settings, where the bugs are
in how features meet (a crash after a failed run inside a trace window, an out-of-memory error
that left an optimizer's state half made).

Usage: scripts/config_sweep.py [--mode train|ranks|profile|csv|signals|files|finetune|postgres] [--seed N] [--runs N]
                               [--gputrain build/bin/gputrain] [--findings FILE.jsonl]
  train    synthetic data, every model, most settings; `gputrain train`
  ranks    the same on two CPU ranks (`--nproc-per-node 2`), with the distributed settings
  profile  the same configs through `gputrain profile --step/--memory/--batch/--trace`
  csv      a random CSV (numbers, categories, missing cells, ids, text) trained, then resumed
           with changed settings, then evaluated (--evaluate)
  signals  a synthetic run stopped by SIGINT, SIGTERM or SIGHUP at a random moment (set-up, a
           step, validation, a checkpoint), which must end 130 (or 0, done first), then resumed
  files    random npy/npz/safetensors arrays (every dtype) or image folders (PNG and JPEG of every
           size and colour type, some damaged) trained, then evaluated (scripts/sweep_sources.py;
           needs numpy)
  finetune a synthetic run, then another started from its weights (model.init_weights: its
           model.safetensors or a checkpoint) with another head, width or model, init_strict,
           train.freeze and optimizer.param_groups drawn from the first run's tensor names
  postgres a random table in a real PostgreSQL (scripts/sweep_postgres.py: every column type,
           NULLs, NaN, images in bytea; the queries people write) trained, resumed after rows
           changed, evaluated, profiled
A seed gives the same configs on every run. Findings go to FILE.jsonl, one JSON object each: the
command, the config, and the output's end; the console shows one line a run. Exit 1 when any.
"""
import argparse
import csv
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

try:
    import yaml
except ImportError:  # JSON is YAML too: the venv's python (numpy, no PyYAML) runs the files mode
    yaml = None

BAD_WORDS = ("report it", "Exception raised from", "terminate called", "what():", "Segmentation")


class Picker:
    def __init__(self, seed):
        self.rng = random.Random(seed)

    def one(self, *choices):
        return self.rng.choice(choices)

    def maybe(self, share):
        return self.rng.random() < share


def model_part(p):
    name = p.one("mlp", "small_cnn", "resnet18", "transformer", "auto")
    m = {"name": name, "width": p.one(1, 2, 4, 8)}
    if p.maybe(.5): m["hidden"] = [p.one(1, 2, 8, 33) for _ in range(p.one(0, 1, 2, 3))]
    if p.maybe(.3): m["activation"] = p.one("relu", "gelu", "silu", "tanh")
    if p.maybe(.3): m["dropout"] = p.one(0, 0.5, 0.99)
    if p.maybe(.3): m["norm"] = p.one("none", "batch", "layer")
    if p.maybe(.3): m["stem"] = p.one("cifar", "imagenet")
    if name == "transformer" or p.maybe(.2):
        heads = p.one(1, 2, 4)
        m.update(layers=p.one(1, 2), heads=heads, d_model=heads * p.one(1, 2, 8), ff_dim=p.one(1, 8), norm_first=p.one(True, False))
    if p.maybe(.1): m["sync_batch_norm"] = True
    return m


def synthetic_data(p, model):
    d = {"source": "synthetic", "task": p.one("classification", "classification", "regression")}
    if model in ("small_cnn", "resnet18"):
        d["shape"] = [p.one(1, 3), p.one(1, 2, 7, 32), p.one(1, 2, 8, 32)]
    elif model == "transformer":
        d["shape"] = [p.one(1, 3, 16), p.one(1, 4, 8)]
    else:
        d["shape"] = p.one([1], [5], [3, 4], [2, 3, 4], [1, 1, 1])
    if d["task"] == "classification":
        d["classes"] = p.one(2, 3, 10, 1000, "auto")
    else:
        d["outputs"] = p.one(1, 2, 5)
        if p.maybe(.3): d["standardize_targets"] = True
    d["samples"], d["val_samples"] = p.one(1, 2, 3, 7, 64, 200), p.one(0, 1, 5, 64)
    if p.maybe(.3): d["val_fraction"] = p.one(0, 0.5, 0.99)
    for key, values in (("shuffle", (True, False)), ("drop_last", (True, False)), ("cache", ("auto", "ram", "none")),
                        ("num_workers", (0, 1, 3, "auto")), ("standardize", (True, False))):
        if p.maybe(.3): d[key] = p.one(*values)
    if p.maybe(.2): d["prefetch"] = p.one(1, 64)
    if model in ("small_cnn", "resnet18"):
        if p.maybe(.4): d["crop_padding"] = p.one(0, 1, 4, 40)
        if p.maybe(.4): d["hflip"] = True
        if p.maybe(.2): d["mean"], d["std"] = [0.5] * d["shape"][0], [0.25] * d["shape"][0]
    return d


def train_part(p):
    t = {"epochs": p.one(1, 2, 3), "max_steps": p.one(0, 1, 3, 5), "batch_size": p.one(1, 2, 3, 16, 64, 1000, "auto")}
    if t["batch_size"] == "auto" and p.maybe(.5): t["max_batch_size"] = p.one(0, 1, 8)
    if p.maybe(.4): t["grad_accum"] = p.one(1, 2, 3, 7)
    if p.maybe(.4): t["precision"] = p.one("fp32", "bf16-mixed", "fp16-mixed", "fp32")
    if p.maybe(.2): t["channels_last"] = p.one("auto", True, False)
    if p.maybe(.3): t["clip_grad_norm"] = p.one(0, 1e-6, 1.0)
    if p.maybe(.3): t["label_smoothing"] = p.one(0, 0.1, 0.99)
    if p.maybe(.2): t["class_weights"] = p.one("none", "balanced")
    if p.maybe(.2): t["deterministic"] = True
    if p.maybe(.2): t["early_stop_patience"] = p.one(1, 2)
    if p.maybe(.2): t["activation_checkpointing"] = True
    if p.maybe(.3): t["ema_decay"], t["ema_every"] = p.one(0, 0.5, 0.999), p.one(1, 3)
    if p.maybe(.15): t["profile"] = {"start_step": p.one(1, 2), "steps": p.one(1, 3)}
    if p.maybe(.15): t["freeze"] = p.one(["net"], ["layers.0"], ["fc"])
    if p.maybe(.15): t["max_time"] = p.one("1s", "0:00:02", "none")
    return t


def optimizer_part(p):
    o = {"name": p.one("sgd", "adam", "adamw"), "lr": p.one(0, 1e-3, 0.1, 10.0, 1e6)}
    if p.maybe(.3): o["momentum"] = p.one(0, 0.9, 1)
    if p.maybe(.2) and o.get("momentum", 0.9) > 0: o["nesterov"] = True
    if p.maybe(.3): o["weight_decay"] = p.one(0, 0.01, 5)
    if p.maybe(.2): o["betas"] = p.one([0.9, 0.999], [0, 0], [0.99, 0.5])
    if p.maybe(.2): o["eps"] = p.one(0, 1e-8, 1)
    return o


def scheduler_part(p):
    s = {"name": p.one("none", "step", "cosine", "onecycle", "plateau")}
    if p.maybe(.4) and s["name"] != "onecycle": s["warmup_steps"] = p.one(0, 1, 2, 1000)
    for key, values in (("step_size", (1, 2)), ("gamma", (0, 0.5, 1)), ("patience", (0, 1)), ("min_lr", (0, 0.5)),
                        ("pct_start", (0, 0.5, 1))):
        if p.maybe(.3): s[key] = p.one(*values)
    return s


def synthetic_config(p):
    model = model_part(p)
    c = {"model": model, "data": synthetic_data(p, model["name"]), "train": train_part(p), "optimizer": optimizer_part(p),
         "scheduler": scheduler_part(p)}
    checkpoint = {}
    for key, values, share in (("every_steps", (0, 1, 2), .4), ("every_epochs", (0, 1), .3), ("keep_last", (1, 2), .3),
                               ("best_metric", ("val_loss", "val_accuracy", "val_balanced_accuracy", "val_mse", "val_mae",
                                                "val_loss_ema", "val_accuracy_ema", "none"), .3),
                               ("best_mode", ("auto", "min", "max"), .2)):
        if p.maybe(share): checkpoint[key] = p.one(*values)
    if checkpoint: c["checkpoint"] = checkpoint
    c["logging"] = {"every_steps": p.one(1, 2, 10), "progress": "lines", "system_every": p.one("off", "1s", "10s")}
    for key, values in (("histograms_every", (0, 1, 2)), ("grad_norm", (True, False)), ("tensorboard", (True, False)),
                        ("jsonl", (True, False))):
        if p.maybe(.3): c["logging"][key] = p.one(*values)
    if p.maybe(.3): c["oom"] = {"max_halvings": p.one(0, 3, 20), "min_micro_batch": p.one(1, 4), "regrow_after": p.one(0, 1)}
    if p.maybe(.2): c["device"] = {"name": "cpu", "max_memory": p.one("none", "64MiB", "1MiB")}
    if p.maybe(.15): c["sizing"] = {"objective": p.one("memory", "throughput"), "target_fraction": p.one(0.05, 1)}
    return c


def write_csv(p, path):
    """A random CSV; returns its feature columns and the kind of its labels."""
    columns = {}
    for j in range(p.one(1, 2, 5)):
        scale = p.one(1, 1e6, 1e-6)
        columns["x%d" % j] = lambda i, scale=scale: "" if p.maybe(.03) else "%.6g" % p.rng.gauss(0, scale)
    if p.maybe(.4): columns["color"] = lambda i: p.one("red", "green", "blue", "")
    if p.maybe(.2): columns["const"] = lambda i: "5"
    if p.maybe(.2): columns["id"] = str
    if p.maybe(.1): columns["text"] = lambda i: p.one("a,b", '"q"', "naïve", " ")
    kind, classes = p.one("int", "str", "float", "bool"), p.one(2, 3, 10)
    label = {"int": lambda i: str(p.rng.randrange(classes)), "str": lambda i: p.one("cat", "dog", "Cat", "bird")[:p.one(3, 4)],
             "float": lambda i: "%.4f" % p.rng.gauss(0, 1), "bool": lambda i: p.one("true", "false")}[kind]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(list(columns) + ["label"])
        for i in range(p.one(1, 2, 3, 5, 40, 300)):
            writer.writerow([make(i) for make in columns.values()] + [label(i)])
    return list(columns), kind


def csv_config(p, path, columns, kind):
    d = {"path": path, "labels": "label",
         "task": "regression" if kind == "float" and p.maybe(.8) else p.one("classification", "regression", "classification")}
    if "color" in columns and p.maybe(.8): d["categorical"] = ["color"] + (["text"] if "text" in columns and p.maybe(.5) else [])
    if "text" in columns and "text" not in d.get("categorical", []):
        d["exclude"] = ["text"]
    elif p.maybe(.2):
        d["exclude"] = [p.one(*columns)]
    if p.maybe(.1): d.pop("exclude", None); d["features"] = p.rng.sample(columns, p.one(1, len(columns)))
    d["missing"] = p.one("error", "drop", "mean", "zero", "mean", "drop")
    if p.maybe(.4): d["val_fraction"] = p.one(0.1, 0.5, 0.9)
    if p.maybe(.3): d["standardize"] = True
    if d["task"] == "regression" and p.maybe(.3): d["standardize_targets"] = True
    if p.maybe(.2): d["classes"] = p.one(2, 3, "auto")
    t = {"epochs": p.one(1, 2), "batch_size": p.one(1, 2, 8, 64, "auto"), "max_steps": p.one(0, 3)}
    if p.maybe(.3): t["grad_accum"] = p.one(2, 3)
    if p.maybe(.2) and d["task"] == "classification": t["class_weights"] = "balanced"
    if p.maybe(.2): t["precision"] = "bf16-mixed"
    best = p.one("val_loss", "none", "val_accuracy" if d["task"] == "classification" else "val_mae")
    return {"model": {"name": p.one("mlp", "auto"), "hidden": [p.one(4, 16)], "norm": p.one("none", "batch", "layer")},
            "data": d, "train": t, "optimizer": {"name": p.one("sgd", "adam", "adamw"), "lr": p.one(1e-3, 0.1)},
            "checkpoint": {"every_steps": p.one(0, 1, 2), "best_metric": best},
            "logging": {"progress": "lines", "every_steps": 1, "system_every": "off"}, "device": {"name": "cpu"}}


def changed_for_resume(p, config):
    c = json.loads(json.dumps(config))
    for _ in range(p.one(1, 2)):
        key = p.one("batch", "hidden", "optimizer", "precision", "epochs", "accumulation", "norm", "validation", "classes")
        if key == "batch": c["train"]["batch_size"] = p.one(1, 3, 16, "auto")
        if key == "hidden": c["model"]["hidden"] = [p.one(4, 8, 16), 4][:p.one(1, 2)]
        if key == "optimizer": c["optimizer"]["name"] = p.one("sgd", "adam", "adamw")
        if key == "precision": c["train"]["precision"] = p.one("fp32", "bf16-mixed", "fp16-mixed")
        if key == "epochs": c["train"]["epochs"] += p.one(1, 3); c["train"]["max_steps"] = 0
        if key == "accumulation": c["train"]["grad_accum"] = p.one(1, 4)
        if key == "norm": c["model"]["norm"] = p.one("none", "batch", "layer")
        if key == "validation": c["data"]["val_fraction"] = p.one(0, 0.2, 0.5)
        if key == "classes": c["data"]["classes"] = p.one(2, 5, "auto")
    return c


def verdict(code, output, interrupted=False):
    """What is wrong with a run's end, or None. An interrupted run may also end 130, with no fix."""
    if code is None or code < 0: return "crash or hang"
    if code not in (0, 1, 2, 3) and not (interrupted and code == 130): return "exit %d" % code
    if any(word in output for word in BAD_WORDS): return "words of a bug"
    if code not in (0, 130) and "fix:" not in output: return "no fix"
    return None


class Sweep:
    def __init__(self, args, folder):
        self.args, self.folder, self.found = args, folder, 0
        self.findings = open(args.findings, "a")

    def run(self, label, command, config):
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=self.folder)
            code, output = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as e:
            code, output = None, str(e.stdout or "") + str(e.stderr or "")
        wrong = verdict(code, output)
        first_error = next((line for line in output.splitlines() if line.startswith("error")), "")
        print("%-10s exit %-4s %-15s %s" % (label, code, wrong or "", first_error[:120]), flush=True)
        if wrong:
            self.found += 1
            self.findings.write(json.dumps({"finding": wrong, "exit": code, "command": command, "config": config,
                                            "output_end": output[-3000:]}) + "\n")
            self.findings.flush()

    def interrupt(self, label, command, config, signal_number, after):
        """Runs `command` and sends it `signal_number` `after` seconds in: it must end 130 (or as a
        run ends that finished or failed first), with no bug's words."""
        started = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=self.folder)
        time.sleep(after)
        if started.poll() is None: started.send_signal(signal_number)
        try:
            output, _ = started.communicate(timeout=120)
            code = started.returncode
        except subprocess.TimeoutExpired:
            started.kill()
            output, code = started.communicate()[0], None
        # Before its set-up has started (the config read, its errors said) a command dies of the
        # signal as any other does; once it has, it ends 130 with its checkpoint.
        wrong = None if code == -signal_number and "\ntraining " not in "\n" + output else verdict(code, output, interrupted=True)
        print("%-10s exit %-4s %-15s %s after %.1f s" % (label, code, wrong or "", signal.Signals(signal_number).name, after), flush=True)
        if wrong:
            self.found += 1
            self.findings.write(json.dumps({"finding": wrong, "exit": code, "command": command, "config": config,
                                            "signal": signal.Signals(signal_number).name, "after_seconds": after,
                                            "output_end": output[-3000:]}) + "\n")
            self.findings.flush()

    def config_file(self, name, config):
        path = os.path.join(self.folder, name + ".yaml")
        with open(path, "w") as f:
            if yaml: yaml.safe_dump(config, f)
            else: json.dump(config, f, indent=1)
        return path


def sweep_synthetic(p, sweep, i, gputrain, mode):
    config = synthetic_config(p)
    config["logging"]["dir"] = os.path.join(sweep.folder, "run%d" % i)
    if mode == "ranks":
        config["distributed"] = {"shard_optimizer": p.one(True, False), "grad_dtype": p.one("none", "bf16", "fp16"),
                                 "bucket_mb": p.one(0.001, 25), "first_bucket_mb": p.one(0.001, 1)}
        if p.maybe(.4): config["model"]["sync_batch_norm"] = True
    path = sweep.config_file("config%d" % i, config)
    if mode == "train":
        command = [gputrain, "train", path]
    elif mode == "ranks":
        command = [gputrain, "train", path, "--nproc-per-node", "2"]
    else:
        command = [gputrain, "profile"] + p.one(["--step", "--steps", "3"], ["--memory"], ["--batch"],
                                                ["--steps", "2", "--trace", os.path.join(sweep.folder, "trace%d.json" % i)]) + [path]
    sweep.run("%d" % i, command, config)


def signals_config(p):
    """A config that passes its checks (the signal is what is swept), of seconds of steps."""
    model = p.one("mlp", "small_cnn", "transformer")
    shape = {"mlp": [16], "small_cnn": [3, 8, 8], "transformer": [8, 4]}[model]
    task = p.one("classification", "regression")
    c = {"model": {"name": model, "hidden": [32], "norm": p.one("none", "batch"), "width": 4, "layers": 1, "d_model": 8, "heads": 2,
                   "ff_dim": 16, "dropout": p.one(0, 0.1)},
         "data": {"source": "synthetic", "task": task, "shape": shape, "samples": p.one(257, 1024), "val_samples": p.one(0, 64),
                  "cache": p.one("auto", "none"), "num_workers": p.one(0, 2), "standardize": p.one(True, False)},
         "train": {"epochs": 50, "max_steps": 1000, "batch_size": p.one(4, 16, "auto"), "grad_accum": p.one(1, 3),
                   "precision": p.one("fp32", "bf16-mixed"), "ema_decay": p.one(0, 0.9), "clip_grad_norm": p.one(0, 1.0)},
         "optimizer": {"name": p.one("sgd", "adam", "adamw"), "lr": 0.01},
         "scheduler": {"name": p.one("none", "cosine", "onecycle")},
         "checkpoint": {"every_steps": p.one(0, 5, 20), "keep_last": p.one(1, 3), "best_metric": "val_loss" if p.maybe(.5) else "none"},
         "logging": {"every_steps": p.one(1, 10), "progress": "lines", "system_every": p.one("off", "1s"),
                     "histograms_every": p.one(0, 10), "tensorboard": p.one(True, False)},
         "device": {"name": "cpu"}}
    if task == "classification": c["data"]["classes"] = p.one(2, 10)
    if p.maybe(.3): c["train"]["profile"] = {"start_step": p.one(2, 20), "steps": p.one(1, 5)}
    if c["data"]["val_samples"] == 0: c["checkpoint"]["best_metric"] = "none"
    return c


def sweep_signals(p, sweep, i, gputrain):
    config = signals_config(p)
    config["logging"]["dir"] = os.path.join(sweep.folder, "run%d" % i)
    path = sweep.config_file("config%d" % i, config)
    signal_number = p.one(signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    sweep.interrupt("%d stop" % i, [gputrain, "train", path], config, signal_number, p.rng.uniform(0.1, 3.0))
    sweep.run("%d resume" % i, [gputrain, "train", path], config)


def sweep_csv(p, sweep, i, gputrain):
    data = os.path.join(sweep.folder, "data%d.csv" % i)
    config = csv_config(p, data, *write_csv(p, data))
    config["logging"]["dir"] = os.path.join(sweep.folder, "run%d" % i)
    path = sweep.config_file("config%d" % i, config)
    sweep.run("%d train" % i, [gputrain, "train", path], config)
    if p.maybe(.6):
        config = changed_for_resume(p, config)
        path = sweep.config_file("config%d-resumed" % i, config)
        sweep.run("%d resume" % i, [gputrain, "train", path], config)
    weights = os.path.join(config["logging"]["dir"], "model.safetensors")
    if os.path.exists(weights):
        sweep.run("%d eval" % i, [gputrain, "train", path, "--evaluate", weights], config)


def quick_run_parts(p, config, folder):
    """The train, optimizer and logging settings of a short CPU run, written into `config`."""
    config["train"] = {"epochs": p.one(1, 2), "max_steps": p.one(0, 3), "batch_size": p.one(1, 2, 8, 64, "auto")}
    if p.maybe(.3): config["train"]["precision"] = p.one("bf16-mixed", "fp16-mixed")
    if p.maybe(.2): config["train"]["grad_accum"] = p.one(2, 3)
    config["optimizer"] = {"name": p.one("sgd", "adam", "adamw"), "lr": p.one(1e-3, 0.1)}
    config["checkpoint"] = {"every_steps": p.one(0, 1, 2), "best_metric": p.one("val_loss", "none")}
    config["logging"] = {"dir": folder, "progress": "lines", "every_steps": 1, "system_every": "off"}
    config["device"] = {"name": "cpu"}


def sweep_files(p, sweep, i, gputrain):
    import sweep_sources  # numpy, which the other modes do without
    if p.maybe(.5):
        data = sweep_sources.write_arrays(p, sweep.folder, "data%d" % i)
        model = {"name": p.one("auto", "mlp", "small_cnn", "resnet18", "transformer"), "hidden": [8], "width": 2,
                 "layers": 1, "d_model": 4, "heads": 2, "ff_dim": 8}
    else:
        data = sweep_sources.write_image_folder(p, sweep.folder, "images%d" % i)
        model = {"name": p.one("auto", "small_cnn", "resnet18", "mlp"), "width": 2, "hidden": [8]}
    if p.maybe(.3): model["norm"] = p.one("batch", "layer")
    config = {"model": model, "data": data}
    quick_run_parts(p, config, os.path.join(sweep.folder, "run%d" % i))
    path = sweep.config_file("config%d" % i, config)
    sweep.run("%d train" % i, [gputrain, "train", path], config)
    weights = os.path.join(config["logging"]["dir"], "model.safetensors")
    if os.path.exists(weights):
        sweep.run("%d eval" % i, [gputrain, "train", path, "--evaluate", weights], config)


def tensor_names(path):
    """The names in a .safetensors file, from its JSON header."""
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        return [name for name in json.loads(f.read(size)) if name != "__metadata__"]


def finetuned(p, first, weights):
    """The config of a run started from `first`'s weights, with what a fine-tuning user changes."""
    c = json.loads(json.dumps(first))
    c["model"]["init_weights"] = weights
    for _ in range(p.one(0, 1, 2)):
        key = p.one("classes", "width", "model", "shape", "strict", "task")
        if key == "classes": c["data"]["classes"] = p.one(2, 3, 7)
        if key == "width": c["model"]["width"], c["model"]["hidden"] = p.one(2, 4), [p.one(8, 16)]
        if key == "model": c["model"]["name"] = p.one("mlp", "small_cnn", "resnet18", "transformer")
        if key == "shape": c["data"]["shape"] = p.one([3, 8, 8], [1, 8, 8], [16], [8, 4])
        if key == "strict": c["model"]["init_strict"] = False
        if key == "task": c["data"]["task"], c["data"]["outputs"] = "regression", p.one(1, 2)
    names = tensor_names(weights) if weights.endswith(".safetensors") else []
    prefixes = sorted({n.rsplit(".", 1)[0] for n in names}) or ["fc"]
    if p.maybe(.4): c["train"]["freeze"] = p.rng.sample(prefixes, p.one(1, min(2, len(prefixes))))
    if p.maybe(.4):
        groups = [{"params": p.rng.sample(prefixes, 1), "lr": p.one(1e-4, 0.01)}]
        if p.maybe(.5): groups.append({"params": "default", "lr": 1e-3})
        c["optimizer"]["param_groups"] = groups
    if p.maybe(.2): c["train"]["ema_decay"] = 0.9
    c["logging"]["dir"] += "-tuned"
    return c


def sweep_finetune(p, sweep, i, gputrain):
    name = p.one("mlp", "small_cnn", "resnet18", "transformer")
    shape = {"mlp": [16], "small_cnn": [3, 8, 8], "resnet18": [3, 8, 8], "transformer": [8, 4]}[name]
    first = {"model": {"name": name, "hidden": [8], "width": 2, "layers": 1, "d_model": 4, "heads": 2, "ff_dim": 8,
                       "norm": p.one("none", "batch")},
             "data": {"source": "synthetic", "shape": shape, "samples": 64, "val_samples": 16, "classes": p.one(3, 10)}}
    quick_run_parts(p, first, os.path.join(sweep.folder, "run%d" % i))
    sweep.run("%d first" % i, [gputrain, "train", sweep.config_file("config%d" % i, first)], first)
    weights = os.path.join(first["logging"]["dir"], "model.safetensors")
    checkpoints = os.path.join(first["logging"]["dir"], "checkpoints")
    if not os.path.exists(weights): return
    if os.path.isdir(checkpoints) and os.listdir(checkpoints) and p.maybe(.3):
        weights = os.path.join(checkpoints, sorted(os.listdir(checkpoints))[-1])
    tuned = finetuned(p, first, weights)
    sweep.run("%d tuned" % i, [gputrain, "train", sweep.config_file("config%d-tuned" % i, tuned)], tuned)


def sweep_database(p, sweep, i, gputrain, server):
    import sweep_postgres  # numpy, as the files mode
    data = sweep_postgres.write_table(p, server, "t%d" % i)
    config = {"model": {"name": p.one("auto", "mlp"), "hidden": [8], "width": 2, "norm": p.one("none", "batch")}, "data": data}
    quick_run_parts(p, config, os.path.join(sweep.folder, "run%d" % i))
    path = sweep.config_file("config%d" % i, config)
    sweep.run("%d train" % i, [gputrain, "train", path], config)
    if p.maybe(.3):  # rows change under the run, then it resumes
        server.sql("INSERT INTO t%d SELECT * FROM t%d LIMIT 3;" % (i, i))
        config["data"]["require_same"] = p.one(True, False)
        config["train"]["epochs"] += 1
        sweep.run("%d resume" % i, [gputrain, "train", sweep.config_file("config%d-resumed" % i, config)], config)
    weights = os.path.join(config["logging"]["dir"], "model.safetensors")
    if os.path.exists(weights) and p.maybe(.5):
        sweep.run("%d eval" % i, [gputrain, "train", path, "--evaluate", weights], config)
    if p.maybe(.2):
        sweep.run("%d profile" % i, [gputrain, "profile", "--steps", "2", path], config)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("train", "ranks", "profile", "csv", "signals", "files", "finetune", "postgres"), default="train")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=100)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--gputrain", default=os.path.join(root, "build", "bin", "gputrain"))
    parser.add_argument("--findings", default="config-sweep-findings.jsonl")
    args = parser.parse_args()
    if not os.access(args.gputrain, os.X_OK):
        sys.exit("error: no gputrain at %s\n  fix: build it (scripts/bootstrap.sh build) or give --gputrain PATH" % args.gputrain)
    args.findings = os.path.abspath(args.findings)
    p = Picker(args.seed)
    with tempfile.TemporaryDirectory(prefix="gputrain-sweep-") as folder:
        sweep = Sweep(args, folder)
        modes = {"csv": sweep_csv, "signals": sweep_signals, "files": sweep_files, "finetune": sweep_finetune}
        server = None
        if args.mode == "postgres":
            import sweep_postgres
            server = sweep_postgres.Server(folder)
        try:
            for i in range(args.runs):
                if server:
                    sweep_database(p, sweep, i, args.gputrain, server)
                elif args.mode in modes:
                    modes[args.mode](p, sweep, i, args.gputrain)
                else:
                    sweep_synthetic(p, sweep, i, args.gputrain, args.mode)
        finally:
            if server: server.stop()
    print("%d runs (%s, seed %d): %d findings%s" % (args.runs, args.mode, args.seed, sweep.found,
                                                   " in " + args.findings if sweep.found else ""))
    return 1 if sweep.found else 0


if __name__ == "__main__":
    sys.exit(main())
