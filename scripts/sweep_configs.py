"""The random configs of scripts/config_sweep.py: settings that each pass the config's checks
alone, drawn for synthetic data (every model, most settings), a random CSV and its resume with
other settings, a run stopped by a signal, and a fine-tuning run from another run's weights.
"""
import csv
import json
import random


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


def quick_run_parts(p, config, folder):
    """The train, optimizer and logging settings of a short CPU run, written into `config`."""
    config["train"] = {"epochs": p.one(1, 2), "max_steps": p.one(0, 3), "batch_size": p.one(1, 2, 8, 64, "auto")}
    if p.maybe(.3): config["train"]["precision"] = p.one("bf16-mixed", "fp16-mixed")
    if p.maybe(.2): config["train"]["grad_accum"] = p.one(2, 3)
    config["optimizer"] = {"name": p.one("sgd", "adam", "adamw"), "lr": p.one(1e-3, 0.1)}
    config["checkpoint"] = {"every_steps": p.one(0, 1, 2), "best_metric": p.one("val_loss", "none")}
    config["logging"] = {"dir": folder, "progress": "lines", "every_steps": 1, "system_every": "off"}
    config["device"] = {"name": "cpu"}


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


def resumed_config(p, config):
    """`config` as a user edits it before running the same command again: the run resumes from its
    last checkpoint with some of its state no longer fitting (another optimizer, EMA turned on,
    other parameter groups, another model width)."""
    c = json.loads(json.dumps(config))
    c["train"]["max_steps"] += p.one(2, 6)
    for _ in range(p.one(1, 2, 3)):
        key = p.one("optimizer", "lr", "scheduler", "ema", "clip", "accumulation", "batch", "precision", "freeze", "groups", "width",
                    "samples", "order", "keep", "smoothing", "norm")
        t, o = c["train"], c["optimizer"]
        if key == "optimizer": o["name"] = p.one("sgd", "adam", "adamw")
        if key == "lr": o["lr"] = p.one(0.1, 1e-4)
        if key == "scheduler": c["scheduler"] = {"name": p.one("none", "cosine", "onecycle", "step", "plateau"), "warmup_steps": p.one(0, 3)}
        if key == "ema": t["ema_decay"] = p.one(0, 0.9, 0.99)
        if key == "clip": t["clip_grad_norm"] = p.one(0, 0.5)
        if key == "accumulation": t["grad_accum"] = p.one(1, 2, 5)
        if key == "batch": t["batch_size"] = p.one(2, 7, 32, "auto")
        if key == "precision": t["precision"] = p.one("fp32", "bf16-mixed", "fp16-mixed")
        if key == "freeze": t["freeze"] = p.one(["0"], ["1"], [])
        if key == "groups": o["param_groups"] = p.one([], [{"params": ["0"], "lr": 0.001}], [{"params": "default", "lr": 0.01}])
        if key == "width": c["model"]["width"], c["model"]["hidden"], c["model"]["d_model"] = p.one(2, 8), [p.one(16, 64)], p.one(4, 16)
        if key == "samples": c["data"]["samples"] = p.one(40, 300, 2000)
        if key == "order": c["data"]["shuffle"], c["data"]["drop_last"] = p.one(True, False), p.one(True, False)
        if key == "keep": c["checkpoint"]["keep_last"] = p.one(1, 5)
        if key == "smoothing" and c["data"]["task"] == "classification": t["label_smoothing"] = p.one(0, 0.2)
        if key == "norm": c["model"]["norm"] = p.one("none", "batch", "layer")
    return c
