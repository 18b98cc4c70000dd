#!/usr/bin/env python3
"""Fine-tuning a torchvision-layout ResNet-18 (#50): weights Python's torch.save wrote, a new head.

Usage: check_fine_tune.py WORKDIR -- GPUTRAIN_TRAIN_COMMAND...

Python writes a random ResNet-18 state_dict with torchvision's names and 1000 classes (torchvision
itself is not needed: the layout below is its own). gputrain fine-tunes it on a 3-class image
folder with model.init_weights pointing at the .pth:
  - the head (fc) is said to start from random weights, and every other tensor is the file's;
  - train.freeze [conv1, bn1, layer1, layer2, layer3] leaves those tensors, batch-norm statistics
    included, bit for bit as in the file, while layer4 and fc train;
  - a DDP save ("module." names) and a Lightning checkpoint ({"state_dict": {"model.<name>"}})
    load the same way;
  - a file that lacks layer4 is refused, naming the tensor, and with model.init_strict: false
    loads what it has, listing the rest.
"""
import os
import subprocess
import sys

import numpy as np
import torch
from PIL import Image
from safetensors import safe_open
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail, fresh_workdir_and_command  # noqa: E402


class BasicBlock(nn.Module):  # torchvision.models.resnet.BasicBlock's names
    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))


class ResNet18(nn.Module):  # torchvision.models.resnet18()'s names and shapes
    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        widths, inplanes = [64, 128, 256, 512], 64
        for i, planes in enumerate(widths):
            stride = 1 if i == 0 else 2
            setattr(self, f"layer{i + 1}", nn.Sequential(BasicBlock(inplanes, planes, stride), BasicBlock(planes, planes)))
            inplanes = planes
        self.fc = nn.Linear(512, classes)


def pretrained_state():
    torch.manual_seed(0)
    model = ResNet18()
    for m in model.modules():  # statistics a pretrained model would have, not the fresh 0 and 1
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    return model.state_dict()


def image_folder(root):
    rng = np.random.default_rng(0)
    for c, name in enumerate(["cat", "dog", "fox"]):
        os.makedirs(os.path.join(root, name))
        for i in range(4):
            pixels = (rng.random((32, 32, 3)) * 80 + c * 60).astype(np.uint8)
            Image.fromarray(pixels).save(os.path.join(root, name, f"{i}.png"))


def train(command, workdir, run, weights, *settings):
    args = command + ["--set", "device=cpu", "--set", "model.name=resnet18", "--set", "model.stem=imagenet",
                      "--set", "data.source=image_folder", "--set", "data.path=images", "--set", "data.image_size=32",
                      "--set", "train.batch_size=6", "--set", "train.max_steps=2", "--set", "logging.progress=lines",
                      "--set", "checkpoint.resume=never", "--set", f"logging.dir={run}",
                      "--set", f"model.init_weights={weights}", *settings]
    print("+ " + " ".join(args), flush=True)
    return subprocess.run(args, capture_output=True, text=True, cwd=workdir)


def trained_weights(workdir, run):
    with safe_open(os.path.join(workdir, run, "model.safetensors"), "pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}


def check_new_head_and_freeze(workdir, command, state):
    torch.save(state, os.path.join(workdir, "resnet18.pth"))
    frozen = ["conv1", "bn1", "layer1", "layer2", "layer3"]
    result = train(command, workdir, "runs/frozen", "resnet18.pth", "--set", f"train.freeze=[{', '.join(frozen)}]")
    if result.returncode != 0:
        fail(f"fine-tuning exit {result.returncode}:\n{result.stderr}")
    if "the classifier head fc.weight ([1000, 512] in the file, [3, 512] here), fc.bias ([1000] in the file, [3] here) " \
       "starts from random weights for this run's 3 outputs" not in result.stderr:
        fail("no note of the new head:\n" + result.stderr)
    if "train.freeze: conv1, bn1, layer1, layer2, layer3:" not in result.stderr:
        fail("no note of the frozen parameters:\n" + result.stderr)
    after = trained_weights(workdir, "runs/frozen")
    for name, tensor in state.items():
        if name.startswith("fc."):
            continue
        same = torch.equal(after[name], tensor.to(after[name].dtype))
        if any(name == p or name.startswith(p + ".") for p in frozen):
            if not same:
                fail(f"{name} is frozen but changed")
        elif name.endswith("weight") and "bn" not in name and same:
            fail(f"{name} trains but did not change")
    print("a torch.save ResNet-18 fine-tunes: new head, frozen layers bit for bit as the file's")


def check_wrappers(workdir, command, state):
    torch.save({"module." + k: v for k, v in state.items()}, os.path.join(workdir, "ddp.pth"))
    torch.save({"epoch": 3, "state_dict": {"model." + k: v for k, v in state.items()}}, os.path.join(workdir, "lightning.ckpt"))
    for name, prefix in (("ddp.pth", "module."), ("lightning.ckpt", "model.")):
        result = train(command, workdir, "runs/" + name, name)
        # Strict loading (the default) refuses a file with a tensor left over: exit 0 means all were read.
        if result.returncode != 0 or f"its names carry the prefix '{prefix}'" not in result.stderr:
            fail(f"{name}: exit {result.returncode}:\n{result.stderr}")
    print("a DDP save and a Lightning checkpoint load under their prefixes")


def check_partial(workdir, command, state):
    torch.save({k: v for k, v in state.items() if not k.startswith("layer4.")}, os.path.join(workdir, "partial.pth"))
    refused = train(command, workdir, "runs/refused", "partial.pth")
    if refused.returncode != 2 or "has no tensor 'layer4.0.conv1.weight'" not in refused.stderr or "init_strict: false" not in refused.stderr:
        fail(f"a file without layer4: exit {refused.returncode}:\n{refused.stderr}")
    partial = train(command, workdir, "runs/partial", "partial.pth", "--set", "model.init_strict=false")
    if partial.returncode != 0 or "tensors loaded; the rest keep their random start (model.init_strict: false)" not in partial.stderr \
            or "not in the file: layer4.0.conv1.weight" not in partial.stderr:
        fail(f"init_strict false: exit {partial.returncode}:\n{partial.stderr}")
    print("a file without layer4 is refused, and with model.init_strict: false loads in part")


def main():
    workdir, command = fresh_workdir_and_command(__doc__)
    image_folder(os.path.join(workdir, "images"))
    state = pretrained_state()
    check_new_head_and_freeze(workdir, command, state)
    check_wrappers(workdir, command, state)
    check_partial(workdir, command, state)


if __name__ == "__main__":
    main()
