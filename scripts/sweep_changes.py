"""The `changes` mode of scripts/config_sweep.py: a run of array files or an image folder that
another program changes while it trains (cut short, rewritten in place, saved again as numpy.save
does, replaced, deleted, moved away and back), then the same command again. Needs numpy
(sweep_sources)."""
import os
import shutil

import sweep_sources
from sweep_configs import quick_run_parts


def change_for(p, path):
    """What another program does to `path` mid-run, as (change, restore): change() does it and
    says what it did; restore() puts back what it moved away."""
    folder = os.path.isdir(path)
    kind = p.one("move away", "delete", "replace", *([] if folder else ["cut short", "rewrite in place", "save again"]))

    def change():
        if not os.path.exists(path): return kind + " (nothing there)"
        size = 0 if folder else os.path.getsize(path)
        if kind == "move away":
            os.rename(path, path + ".away")
        elif kind == "delete":
            shutil.rmtree(path) if folder else os.remove(path)
        elif kind == "replace":  # a new copy moved over the old one, as os.replace does
            (shutil.copytree if folder else shutil.copyfile)(path, path + ".new")
            if folder: os.rename(path, path + ".old")
            os.replace(path + ".new", path)
        elif kind == "cut short":
            with open(path, "r+b") as f: f.truncate(p.rng.randrange(size) if size else 0)
        elif kind == "rewrite in place":
            with open(path, "r+b") as f:
                f.seek(size // 2)
                f.write(os.urandom(size - size // 2))
        else:  # numpy.save's way: the file emptied, then written again
            content = open(path, "rb").read()
            with open(path, "wb") as f: f.write(content)
        return kind

    def restore():
        if kind == "move away" and os.path.exists(path + ".away"): os.rename(path + ".away", path)

    return change, restore


def sweep_changes(p, sweep, i, gputrain):
    if p.maybe(.5):
        data = sweep_sources.write_arrays(p, sweep.folder, "data%d" % i)
    else:
        data = sweep_sources.write_image_folder(p, sweep.folder, "images%d" % i)
        data["cache"] = p.one("none", "none", "auto")  # streamed: read from the files all run long
    config = {"model": {"name": "auto", "hidden": [8], "width": 2, "layers": 1, "d_model": 4, "heads": 2, "ff_dim": 8}, "data": data}
    quick_run_parts(p, config, os.path.join(sweep.folder, "run%d" % i))
    config["train"].update(epochs=100000, max_steps=0, max_time="%ds" % p.one(3, 5))
    path = sweep.config_file("config%d" % i, config)
    change, restore = change_for(p, p.one(data["path"], data.get("labels", data["path"])))
    command = [gputrain, "train", path] + p.one([], [], ["--nproc-per-node", "2"])
    sweep.run_while("%d train" % i, command, config, change, p.rng.uniform(0.2, 3.0))
    restore()
    sweep.run("%d again" % i, command, config)
