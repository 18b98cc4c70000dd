#!/usr/bin/env python3
"""Runs gputrain on random combinations of settings that each pass alone, and keeps every run
that ends as no run should (docs/fuzzing.md, "Sweeping settings"):

- a crash (a signal) or a hang (no end in 120 s);
- an exit code other than 0, 1, 2, 3;
- words of a bug: ours ("report it", the fix of an error we could not explain), LibTorch's
  ("Exception raised from": a backtrace), the C++ runtime's ("terminate called", "what():");
- an error without a `fix:` line;
- malformed output: a metrics.jsonl line, report.json or `--json`'s stdout that is not strict
  JSON (a NaN written as such, which Python reads and other parsers refuse).

The fuzz targets feed each reader bytes; this feeds whole commands settings, where the bugs are
in how features meet (a crash after a failed run inside a trace window, an out-of-memory error
that left an optimizer's state half made).

Usage: scripts/config_sweep.py [--mode MODE] [--seed N] [--runs N]
                               [--gputrain build/bin/gputrain] [--findings FILE.jsonl] [--show REGEX]
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
  resume   a short run on one or two ranks, then the same command after edits a user makes
           (another optimizer, EMA on, other groups, width, batch, precision), on one or two ranks
  torchscript  a random module scripted in Python (scripts/sweep_torchscript.py: a tuple or dict
           back, a shape off by a dimension, class ids, a detached output, a host sync, float64
           weights, a second argument, ...) trained with random settings, on one or two ranks
  changes  a run of array files or an image folder that another program changes mid-run (cut
           short, rewritten in place, saved again, replaced, deleted, moved away and back), then
           the same command again (scripts/sweep_changes.py; needs numpy)
  sets     a small valid run with one to three --set overrides of documented keys (or whole
           sections) to values of every YAML kind and the numbers that break parsers
  flags    a random command line of verify, quick-train, profile or train: the options each
           --help lists, with values of every kind (or none), in an environment with the
           launchers' rank variables, the options' twins or CUDA_VISIBLE_DEVICES set wrong
           (scripts/sweep_flags.py)
A seed gives the same configs on every run. Findings go to FILE.jsonl, one JSON object each: the
command, the config, and the output's end; the console shows one line a run. Exit 1 when any.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

try:
    import yaml
except ImportError:  # JSON is YAML too: the venv's python (numpy, no PyYAML) runs the files mode
    yaml = None

from sweep_configs import (Picker, changed_for_resume, csv_config, finetuned, quick_run_parts, resumed_config, signals_config,
                           synthetic_config, write_csv)

BAD_WORDS = ("report it", "Exception raised from", "terminate called", "what():", "Segmentation")


def verdict(code, output, interrupted=False):
    """What is wrong with a run's end, or None. An interrupted run may also end 130, with no fix."""
    if code is None or code < 0: return "crash or hang"
    if code not in (0, 1, 2, 3) and not (interrupted and code == 130): return "exit %d" % code
    if any(word in output for word in BAD_WORDS): return "words of a bug"
    if code not in (0, 130) and "fix:" not in output: return "no fix"
    return None


def first_error(output):
    return next((line for line in output.splitlines() if line.startswith("error")), "")


def strict_json(text):
    """json.loads that refuses NaN and Infinity, which Python writes and JSON parsers elsewhere refuse."""
    def refuse(token):
        raise ValueError("%s is not JSON" % token)
    return json.loads(text, parse_constant=refuse)


def json_asked(command):
    """Whether the command line's last --json asks for JSON (`--json=no` after `--json` does not)."""
    flags = [word for word in command if word == "--json" or word.startswith("--json=")]
    return bool(flags) and flags[-1].split("=", 1)[-1].lower() not in ("no", "false", "0", "off")


def written_wrong(command, config, stdout):
    """What is malformed in what a run wrote (metrics.jsonl, report.json, --json's stdout), or None."""
    folder = config.get("logging", {}).get("dir", "")
    try:
        if json_asked(command) and stdout.strip():
            strict_json(stdout)
        metrics = os.path.join(folder, "metrics.jsonl")
        if folder and os.path.exists(metrics):
            for n, line in enumerate(open(metrics), 1):
                if line.strip(): strict_json(line)
        report = os.path.join(folder, "report.json")
        if folder and os.path.exists(report):
            strict_json(open(report).read())
    except ValueError as e:  # json.JSONDecodeError too
        return "malformed output: %s" % e
    return None


class Sweep:
    def __init__(self, args, folder):
        self.args, self.folder, self.found = args, folder, 0
        self.findings = open(args.findings, "a")

    def run(self, label, command, config, env=None):
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=self.folder, env=env)
            code, output = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as e:
            code, output = None, str(e.stdout or "") + str(e.stderr or "")
        wrong = verdict(code, output) or (written_wrong(command, config, done.stdout) if code is not None else None)
        print("%-10s exit %-4s %-15s %s" % (label, code, (wrong or "")[:15], first_error(output)[:120]), flush=True)
        if self.args.show and re.search(self.args.show, output):
            print("  command: %s\n  config: %s\n%s" % (" ".join(command), json.dumps(config), output), flush=True)
        self.record(wrong, code, command, config, output)

    def record(self, wrong, code, command, config, output, **more):
        """Keeps a run that ended wrong in the findings file."""
        if not wrong: return
        self.found += 1
        self.findings.write(json.dumps({"finding": wrong, "exit": code, "command": command, "config": config, **more,
                                        "output_end": output[-3000:]}) + "\n")
        self.findings.flush()

    def meanwhile(self, command, after, act):
        """Starts `command`, calls `act(process)` `after` seconds in, and waits for its end: its
        exit code (None after a hang) and output."""
        started = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=self.folder)
        time.sleep(after)
        act(started)
        try:
            output, _ = started.communicate(timeout=120)
            return started.returncode, output
        except subprocess.TimeoutExpired:
            started.kill()
            return None, started.communicate()[0]

    def interrupt(self, label, command, config, signal_number, after):
        """Runs `command` and sends it `signal_number` `after` seconds in: it must end 130 (or as a
        run ends that finished or failed first), with no bug's words."""
        code, output = self.meanwhile(command, after, lambda started: started.poll() is None and started.send_signal(signal_number))
        # Before its set-up has started (the config read, its errors said) a command dies of the
        # signal as any other does; once it has, it ends 130 with its checkpoint.
        wrong = None if code == -signal_number and "\ntraining " not in "\n" + output else verdict(code, output, interrupted=True)
        name = signal.Signals(signal_number).name
        print("%-10s exit %-4s %-15s %s after %.1f s" % (label, code, wrong or "", name, after), flush=True)
        self.record(wrong, code, command, config, output, signal=name, after_seconds=after)

    def run_while(self, label, command, config, change, after):
        """Runs `command` and calls `change()`, another program's doing to its data, `after`
        seconds in: the run must end as any run should."""
        did = []
        code, output = self.meanwhile(command, after, lambda started: did.append(change()))
        wrong = verdict(code, output)
        print("%-10s exit %-4s %-15s %s after %.1f s: %s" % (label, code, wrong or "", did[0], after, first_error(output)[:90]), flush=True)
        self.record(wrong, code, command, config, output, change=did[0], after_seconds=after)

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
        sweep.run("%d eval" % i, [gputrain, "train", path, "--evaluate", weights] + p.one([], ["--json"]), config)


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
    sweep.run("%d train" % i, [gputrain, "train", path] + p.one([], [], ["--nproc-per-node", "2"]), config)
    weights = os.path.join(config["logging"]["dir"], "model.safetensors")
    if os.path.exists(weights):
        sweep.run("%d eval" % i, [gputrain, "train", path, "--evaluate", weights] + p.one([], ["--json"]), config)
    # The same files without a config: a loader sweep, and a run of --set alone (the README's way in).
    labels = ["--labels", data["labels"]] if "labels" in data and "features" not in data else []
    if p.maybe(.3):
        sweep.run("%d sweep" % i, [gputrain, "profile", "--path", data["path"], "--batches", "3", "--repeats", "1"] + labels, config)
    if p.maybe(.3):
        sets = ["data.path=" + data["path"], "train.max_steps=2", "device.name=cpu", "logging.dir=" + config["logging"]["dir"] + "-bare"]
        sets += ["data.labels=" + data["labels"]] if labels else []
        sweep.run("%d bare" % i, [gputrain, "train"] + [arg for s in sets for arg in ("--set", s)], config)


def sweep_data_changes(p, sweep, i, gputrain):
    import sweep_changes  # numpy, which the other modes do without
    sweep_changes.sweep_changes(p, sweep, i, gputrain)


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
        sweep.run("%d eval" % i, [gputrain, "train", path, "--evaluate", weights] + p.one([], ["--json"]), config)
    if p.maybe(.2):
        sweep.run("%d profile" % i, [gputrain, "profile", "--steps", "2", path], config)


def sweep_resume(p, sweep, i, gputrain):
    """A short run on one or two ranks, then the same command after an edit, on one or two ranks."""
    config = signals_config(p)
    config["train"]["max_steps"], config["checkpoint"]["every_steps"] = p.one(3, 6), p.one(1, 2)
    if config["model"]["name"] == "transformer": config["data"]["standardize"] = False  # refused for [sequence, features]
    config["logging"]["dir"] = os.path.join(sweep.folder, "run%d" % i)
    ranks = lambda: p.one([], [], ["--nproc-per-node", "2"])
    sweep.run("%d first" % i, [gputrain, "train", sweep.config_file("config%d" % i, config)] + ranks(), config)
    for k in range(p.one(1, 2)):
        config = resumed_config(p, config)
        if p.maybe(.2): config["distributed"] = {"shard_optimizer": p.one(True, False)}
        path = sweep.config_file("config%d-resumed%d" % (i, k), config)
        sweep.run("%d resume" % i, [gputrain, "train", path] + ranks(), config)


def sweep_scripted(p, sweep, i, gputrain):
    import sweep_torchscript  # torch, as the files mode needs numpy
    features, classes = p.one(1, 6), p.one(2, 5)
    kind = sweep_torchscript.write_module(p, sweep.folder, "net%d" % i, features, classes)
    if kind is None: return
    config = {"model": {"torchscript": os.path.join(sweep.folder, "net%d.pt" % i)},
              "data": {"source": "synthetic", "shape": p.one([features], [features], [1, features]), "samples": p.one(7, 64),
                       "val_samples": p.one(0, 9), "classes": classes}}
    quick_run_parts(p, config, os.path.join(sweep.folder, "run%d" % i))
    t = config["train"]
    for key, values, share in (("ema_decay", (0.9,), .2), ("freeze", (["hidden"], ["b"]), .15), ("channels_last", (True,), .1),
                               ("activation_checkpointing", (True,), .1), ("clip_grad_norm", (1.0,), .2), ("cuda_graphs", ("on",), .05)):
        if p.maybe(share): t[key] = p.one(*values)
    if p.maybe(.15): config["optimizer"]["param_groups"] = [{"params": ["b"], "lr": 0.01}]
    if p.maybe(.2): config["data"]["task"], config["data"]["outputs"] = "regression", classes
    command = [gputrain, "train", sweep.config_file("config%d" % i, config)] + p.one([], [], [], ["--nproc-per-node", "2"])
    sweep.run("%d %s" % (i, kind), command, config)
    weights = os.path.join(config["logging"]["dir"], "model.safetensors")
    if os.path.exists(weights) and config["data"]["val_samples"]:
        sweep.run("%d eval" % i, [gputrain, "train", command[2], "--evaluate", weights] + p.one([], ["--json"]), config)


# Values of every YAML kind, and the numbers that break parsers: one overrides a documented key.
HOSTILE_VALUES = ("", "null", "[]", "{}", "-1", "0", "1e309", "-0.0", "abc", "true", "[1, [2]]", "99999999999999999999", ".nan",
                  ".inf", "'5'", "1.5", "[0]", "{a: 1}", "0x10", "1e-320", "[-1]", '"1"', "2", "[2, 2]", "[a, b]", "1e6")
SECTIONS = ("model", "data", "train", "optimizer", "scheduler", "checkpoint", "logging", "device", "distributed", "oom", "sizing")


def documented_keys():
    """Every key docs/configuration.md's tables list, and the sections themselves."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = open(os.path.join(root, "docs", "configuration.md")).read()
    return sorted(set(re.findall(r"^\| `([a-z_]+\.[a-z_.]+)`", text, re.M))) + list(SECTIONS)


def small_run(p, sweep, i):
    """A valid config of a few CPU steps of a small model on synthetic data."""
    model = p.one("mlp", "small_cnn", "transformer")
    config = {"model": {"name": model, "hidden": [8], "width": 2, "layers": 1, "d_model": 4, "heads": 2, "ff_dim": 8},
              "data": {"source": "synthetic", "shape": {"mlp": [6], "small_cnn": [3, 8, 8], "transformer": [4, 4]}[model],
                       "samples": 32, "val_samples": 8, "classes": 3}}
    quick_run_parts(p, config, os.path.join(sweep.folder, "run%d" % i))
    config["train"]["max_steps"] = 3  # a set 0 or a larger epoch count still ends within seconds
    return config


def sweep_sets(p, sweep, i, gputrain, keys):
    config = small_run(p, sweep, i)
    sets = []
    for _ in range(p.one(1, 1, 2, 3)):
        sets += ["--set", "%s=%s" % (p.one(*keys), p.one(*HOSTILE_VALUES))]
    config["sets"] = sets
    path = sweep.config_file("config%d" % i, {k: v for k, v in config.items() if k != "sets"})
    sweep.run("%d" % i, [gputrain, "train", path] + sets, config)


def sweep_command_lines(p, sweep, i, gputrain, options):
    """A random command line of a random command, in an environment with some of what the commands
    read set (scripts/sweep_flags.py)."""
    import sweep_flags
    config = small_run(p, sweep, i)
    path = sweep.config_file("config%d" % i, config)
    command = p.one(*sweep_flags.COMMANDS)
    words = sweep_flags.command_line(p, gputrain, command, options[command], path, sweep.folder)
    env, config["environment"] = sweep_flags.environment(p)
    sweep.run("%d %s" % (i, command), words, config, env=env)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("train", "ranks", "profile", "csv", "signals", "files", "finetune", "postgres", "sets", "resume", "torchscript",
                                           "flags", "changes"), default="train")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=100)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--gputrain", default=os.path.join(root, "build", "bin", "gputrain"))
    parser.add_argument("--findings", default="config-sweep-findings.jsonl")
    parser.add_argument("--show", metavar="REGEX", help="print the command, config and whole output of each run whose output matches")
    args = parser.parse_args()
    if not os.access(args.gputrain, os.X_OK):
        sys.exit("error: no gputrain at %s\n  fix: build it (scripts/bootstrap.sh build) or give --gputrain PATH" % args.gputrain)
    args.findings = os.path.abspath(args.findings)
    p = Picker(args.seed)
    with tempfile.TemporaryDirectory(prefix="gputrain-sweep-") as folder:
        sweep = Sweep(args, folder)
        modes = {"csv": sweep_csv, "signals": sweep_signals, "files": sweep_files, "finetune": sweep_finetune, "resume": sweep_resume,
                 "torchscript": sweep_scripted, "changes": sweep_data_changes}
        server, keys = None, documented_keys()
        if args.mode == "flags":
            import sweep_flags as flags
            options = {command: flags.help_options(args.gputrain, command) for command in flags.COMMANDS}
        if args.mode == "postgres":
            import sweep_postgres
            server = sweep_postgres.Server(folder)
        try:
            for i in range(args.runs):
                if server:
                    sweep_database(p, sweep, i, args.gputrain, server)
                elif args.mode == "sets":
                    sweep_sets(p, sweep, i, args.gputrain, keys)
                elif args.mode == "flags":
                    sweep_command_lines(p, sweep, i, args.gputrain, options)
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
