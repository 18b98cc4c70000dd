"""Random TorchScript modules for scripts/config_sweep.py's `torchscript` mode: the modules people
script and hand to `model.torchscript`, right and wrong (a tuple or a dict back, a shape off by
one dimension, class ids instead of scores, a detached output, a NaN, a host sync, an output whose
shape follows the batch's, an input changed in place, a second required argument, float64 or
frozen weights, batch norm).

Each module's source is written to a file of its own and imported (torch.jit.script reads the
source of what it compiles), scripted and saved. Needs torch: run it under the test environment's
Python.
"""
import importlib.util
import os

import torch  # noqa: F401  (the written modules import it too)

HEADER = "import torch\nfrom typing import Dict, List, Optional, Tuple\n\n\n"

BODIES = {  # name: (the return annotation, the body's lines)
    "plain": ("torch.Tensor", ["return self.b(self.hidden(x))"]),
    "tuple": ("Tuple[torch.Tensor, torch.Tensor]", ["h = self.hidden(x)", "return self.b(h), h"]),
    "dict": ("Dict[str, torch.Tensor]", ["return {'logits': self.b(self.hidden(x))}"]),
    "list": ("List[torch.Tensor]", ["return [self.b(self.hidden(x))]"]),
    "summed": ("torch.Tensor", ["return self.b(self.hidden(x)).sum(1)"]),
    "unsqueezed": ("torch.Tensor", ["return self.b(self.hidden(x)).unsqueeze(2)"]),
    "class_ids": ("torch.Tensor", ["return self.b(self.hidden(x)).argmax(1)"]),
    "detached": ("torch.Tensor", ["return self.b(self.hidden(x)).detach()"]),
    "nan": ("torch.Tensor", ["return torch.log(self.b(self.hidden(x)) - 1e9)"]),
    "host_sync": ("torch.Tensor", ["if float(x.abs().sum()) > 1e12:", "    x = x * 0", "return self.b(self.hidden(x))"]),
    "by_batch": ("torch.Tensor", ["out = self.b(self.hidden(x))", "if x.size(0) % 2 == 1:", "    return out[:, :1]", "return out"]),
    "in_place": ("torch.Tensor", ["x.mul_(2.0)", "return self.b(self.hidden(x))"]),
    "printing": ("torch.Tensor", ["print(x.shape)", "return self.b(self.hidden(x))"]),
    "raising": ("torch.Tensor", ["if x.size(0) > 3:", "    raise ValueError('batches of 3 at most')", "return self.b(self.hidden(x))"]),
    "constant": ("torch.Tensor", ["return torch.zeros(x.size(0), self.classes)"]),
    "flattening": ("torch.Tensor", ["return self.b(self.hidden(x.reshape(x.size(0), -1)))"]),
}


def module_source(p, features, classes):
    width = p.one(1, 8, 32)
    hidden = p.one("torch.nn.Sequential(torch.nn.Linear({f}, {w}), torch.nn.ReLU())",
                   "torch.nn.Sequential(torch.nn.Linear({f}, {w}), torch.nn.BatchNorm1d({w}), torch.nn.ReLU())",
                   "torch.nn.Sequential(torch.nn.Linear({f}, {w}), torch.nn.Dropout(0.5), torch.nn.LayerNorm({w}))",
                   "torch.nn.Linear({f}, {w})").format(f=features, w=width)
    init = ["super().__init__()", "self.classes = %d" % classes, "self.hidden = " + hidden,
            "self.b = torch.nn.Linear(%d, %d)" % (width, p.one(classes, classes, classes, classes + 1))]
    if p.maybe(.08): init.append("self.double()")
    if p.maybe(.08): init.append("self.half()")
    if p.maybe(.08): init.append("self.requires_grad_(False)")
    if p.maybe(.08): init.append("self.register_buffer('seen', torch.zeros(1))")
    kind = p.one("plain", "plain", "plain", "plain", *BODIES)
    annotation, body = BODIES[kind]
    arguments = p.one("x: torch.Tensor", "x: torch.Tensor", "x: torch.Tensor", "x: torch.Tensor, y: Optional[torch.Tensor] = None",
                      "x: torch.Tensor, y: torch.Tensor")
    lines = [HEADER + "class Net(torch.nn.Module):", "    def __init__(self):"] + ["        " + line for line in init]
    lines += ["", "    def forward(self, %s) -> %s:" % (arguments, annotation)] + ["        " + line for line in body]
    return "\n".join(lines) + "\n", kind


def write_module(p, folder, name, features, classes):
    """A random module scripted and saved as NAME.pt; its kind, or None when torch.jit.script
    itself refused it (a sweep of gputrain, not of TorchScript's compiler)."""
    source, kind = module_source(p, features, classes)
    path = os.path.join(folder, name + ".py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        torch.jit.script(module.Net()).save(os.path.join(folder, name + ".pt"))
    except Exception:  # noqa: BLE001  (a body TorchScript does not compile)
        return None
    return kind
