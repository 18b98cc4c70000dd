"""The data and models of gputrain's built-ins, rebuilt in PyTorch for the benchmarks' peer side: the
synthetic data exactly as src/data/synthetic.cpp makes it (same seeds, same samples, same labels), its
epoch order, and the mlp, small_cnn, resnet18 (CIFAR stem) and transformer models under the names and
in the layer order of src/train/models/, so that one initial-weights file starts both sides."""
import math

import torch
import torch.nn.functional as F

SEED = 42  # gputrain's default train.seed


def unit_filters(shape, gen):
    f = torch.randn(*shape, generator=gen)
    return f / f.flatten(1).norm(dim=1).reshape(shape[0], *[1] * (len(shape) - 1))


def raw_features(x, filters):
    """src/data/synthetic.cpp's view of images and sequences: the mean over positions of a ReLU of a
    3x3 convolution (of the image averaged over whole cells, at most 16 x 16 of them) or a per-step
    projection."""
    if x.dim() == 3:
        r = x @ filters.t()
    else:
        images = x.reshape(x.shape[0], x.shape[1], x.shape[2], -1)
        kh, kw = -(-images.shape[2] // 16), -(-images.shape[3] // 16)  # whole cells, at most 16 x 16 of them
        if (kh, kw) != (1, 1):
            images = F.avg_pool2d(images, (kh, kw)) * math.sqrt(kh * kw)
        r = F.conv2d(images, filters).flatten(2).transpose(1, 2)
    return r.relu().mean(1)


REFERENCE_SAMPLES = 4096  # src/data/synthetic.cpp's kReferenceSamples
NORMAL_BLOCK_VALUES = 1 << 22  # src/data/synthetic_teacher.hpp's kNormalBlockValues
U64 = (1 << 64) - 1


def block_seed(seed, block):
    """src/data/synthetic.cpp's block_seed: the seed itself for block 0, then SplitMix64's finaliser of
    seed + block * the golden ratio."""
    if block == 0:
        return seed
    z = (seed + block * 0x9E3779B97F4A7C15) & U64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & U64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & U64
    return z ^ (z >> 31)


def standard_normal(shape, seed):
    """The synthetic inputs as gputrain draws them: blocks of the flat tensor, each from a generator of its own."""
    x = torch.empty(*shape)
    flat = x.view(-1)
    for j, start in enumerate(range(0, flat.numel(), NORMAL_BLOCK_VALUES)):
        flat[start:start + NORMAL_BLOCK_VALUES].normal_(generator=torch.Generator().manual_seed(block_seed(seed, j)))
    return x


def synthetic(shape, classes, samples, split, seed=SEED):
    gen = torch.Generator().manual_seed(seed)  # the teacher: view filters, reference set, then the map
    view, features, offsets = None, math.prod(shape), torch.zeros(classes)
    if len(shape) >= 2:
        if len(shape) == 2:
            filters, reference = unit_filters([16, shape[1]], gen), [REFERENCE_SAMPLES] + list(shape)
        else:
            width = math.prod(shape[2:])
            h, w = shape[1] // -(-shape[1] // 16), width // -(-width // 16)
            filters, reference = unit_filters([16, shape[0], min(h, 3), min(w, 3)], gen), [REFERENCE_SAMPLES, shape[0], h, w]
        raw = raw_features(torch.randn(*reference, generator=gen), filters)
        mean, scale = raw.mean(0), raw.std(0)
        view, features = (lambda x: (raw_features(x, filters) - mean) / scale), 16
    teacher = torch.randn(features, classes, generator=gen) / math.sqrt(features)
    if view is not None and classes <= REFERENCE_SAMPLES:  # offsets giving every class its share of the reference set
        logits = ((raw - mean) / scale).mm(teacher)
        for _ in range(200):
            share = torch.bincount((logits - offsets).argmax(1), minlength=classes).to(torch.double) / REFERENCE_SAMPLES
            offsets += (share - 1.0 / classes).to(torch.float)
    x = standard_normal([samples, *shape], seed + 1 + split)
    seen = view(x) if view is not None else x.reshape(samples, -1)
    return x, (seen.matmul(teacher) - offsets).argmax(1)


def epoch_order(samples, epoch, seed=SEED):
    return torch.randperm(samples, generator=torch.Generator().manual_seed(seed * 1000003 + epoch))


def mlp(features, hidden, classes, norm=False, dropout=0.0):
    layers, width = [torch.nn.Flatten()], features
    for h in hidden:
        layers += [torch.nn.Linear(width, h)] + ([torch.nn.LayerNorm(h)] if norm else []) + [torch.nn.ReLU()]
        layers += [torch.nn.Dropout(dropout)] if dropout > 0 else []
        width = h
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, classes))


def small_cnn(channels, width, classes):
    layers, c = [], channels
    for out in (width, 2 * width, 4 * width):
        layers += [torch.nn.Conv2d(c, out, 3, padding=1, bias=False), torch.nn.BatchNorm2d(out), torch.nn.ReLU(inplace=True)]
        if out != 4 * width:
            layers.append(torch.nn.MaxPool2d(2))
        c = out
    return torch.nn.Sequential(*layers, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4 * width, classes))


class BasicBlock(torch.nn.Module):
    """torchvision's ResNet BasicBlock, with its parameter names."""

    def __init__(self, inplanes, planes, stride):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(planes)
        self.relu = torch.nn.ReLU(inplace=True)
        self.conv2 = torch.nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = torch.nn.Sequential(torch.nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                                  torch.nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class ResNet18Cifar(torch.nn.Module):
    """torchvision's resnet18 (same layout and names) with the CIFAR stem: a 3x3 stride-1 conv1 and no
    max-pool, as gputrain's `model.stem: cifar`. Written out so the GPU machine needs no torchvision."""

    def __init__(self, classes):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(64)
        self.relu = torch.nn.ReLU(inplace=True)
        widths, inplanes = (64, 128, 256, 512), 64
        for i, planes in enumerate(widths):
            stride = 1 if i == 0 else 2
            setattr(self, "layer%d" % (i + 1), torch.nn.Sequential(BasicBlock(inplanes, planes, stride), BasicBlock(planes, planes, 1)))
            inplanes = planes
        self.avgpool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(512, classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18(classes):
    return ResNet18Cifar(classes)


class Transformer(torch.nn.Module):
    """gputrain's `model.name: transformer` (same layout and names): a linear embedding of each
    position, learned position vectors, PyTorch's encoder (batch-first, post-norm, ReLU), mean pool."""

    def __init__(self, shape, d_model, heads, ff_dim, layers, dropout, classes):
        super().__init__()
        self.embed = torch.nn.Linear(shape[1], d_model)
        self.positions = torch.nn.Parameter(torch.randn(1, shape[0], d_model) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(d_model, heads, ff_dim, dropout, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(d_model)
        self.head = torch.nn.Linear(d_model, classes)

    def forward(self, x):
        return self.head(self.norm(self.encoder(self.embed(x) + self.positions).mean(1)))
