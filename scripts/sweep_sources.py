"""Random data files for scripts/config_sweep.py's `files` mode: arrays (npy, npz, safetensors) of
every dtype and shape a user saves, and image folders of every size and colour type, with the
flaws real ones have (a NaN, labels of another length, a cut-short JPEG, a note among the images).
Each writer returns the `data:` part of a config that reads what it wrote.

Needs numpy; Pillow when present writes JPEGs too (PNGs are written by hand with zlib).
"""
import io
import json
import os
import struct
import zipfile
import zlib

import numpy as np

try:
    from PIL import Image
except ImportError:
    Image = None

FEATURE_DTYPES = ("float32", "float32", "float64", "float16", "uint8", "int8", "int32", "int64", "bool", ">f4", "uint16")
LABEL_DTYPES = ("int64", "int64", "int32", "uint8", "int16", "float32", "bool", "float64", ">i8")
SAFETENSORS_TYPES = {"float32": "F32", "float64": "F64", "float16": "F16", "uint8": "U8", "int8": "I8", "int32": "I32",
                     "int64": "I64", "bool": "BOOL", "int16": "I16", "uint16": "U16"}


def random_arrays(p):
    """Features and labels as a user's script would leave them, now and then with a flaw."""
    n = p.one(1, 2, 3, 9, 64, 300)
    shape = [n] + p.one([], [1], [4], [3, 5], [1, 6, 6], [3, 8, 8], [2, 2, 2, 2])
    dtype = p.one(*FEATURE_DTYPES)
    x = (np.random.default_rng(p.rng.randrange(1 << 30)).normal(0, p.one(1, 100, 1e-3), shape) * 10).astype(dtype)
    if p.maybe(.05) and x.dtype.kind == "f": x.flat[p.rng.randrange(x.size)] = p.one(np.nan, np.inf)
    if p.maybe(.1): x = np.asfortranarray(x)
    task = p.one("classification", "classification", "regression")
    label_dtype = p.one(*LABEL_DTYPES)
    if task == "classification":
        y = np.array([p.rng.randrange(p.one(2, 3, 10)) for _ in range(n)]).astype(label_dtype)
        if p.maybe(.05): y[0] = -1 if y.dtype.kind == "i" else y[0]
    else:
        y = np.random.default_rng(p.rng.randrange(1 << 30)).normal(0, 1, [n] + p.one([], [1], [3])).astype(p.one("float32", "float64", "float16"))
    if p.maybe(.05): y = y[:max(n - 1, 1)] if n > 1 else np.concatenate([y, y])
    return x, y, task


def npy_bytes(a):
    buffer = io.BytesIO()
    np.save(buffer, a)
    return buffer.getvalue()


def safetensors_bytes(tensors):
    header, offset, blobs = {}, 0, []
    for name, a in tensors.items():
        a = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<")))
        blob = a.tobytes()
        header[name] = {"dtype": SAFETENSORS_TYPES.get(a.dtype.name, "F32"), "shape": list(a.shape), "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def write_arrays(p, folder, name):
    """npy, npz or safetensors files of random arrays; the data part reading them."""
    x, y, task = random_arrays(p)
    source = p.one("npy", "npz", "safetensors")
    if source == "safetensors" and x.dtype.byteorder == ">": x = x.astype(x.dtype.newbyteorder("<"))
    fkey, lkey = p.one(("x", "y"), ("features", "labels"), ("images", "target"), ("a", "b"))
    data = {"task": task}
    path = os.path.join(folder, name + "." + source)
    if source == "npy":
        with open(path, "wb") as f: f.write(npy_bytes(x))
        data["labels"] = os.path.join(folder, name + "-labels.npy")
        with open(data["labels"], "wb") as f: f.write(npy_bytes(y))
    elif source == "npz":
        method = p.one(zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
        with zipfile.ZipFile(path, "w", method) as z:
            z.writestr(fkey + ".npy", npy_bytes(x))
            z.writestr(lkey + ".npy", npy_bytes(y))
    else:
        with open(path, "wb") as f: f.write(safetensors_bytes({fkey: x, lkey: y}))
    if source != "npy" and fkey == "a": data.update(features=[fkey], labels=lkey)
    data["path"] = path
    return data


def png_bytes(pixels):
    """A PNG of a uint8 or uint16 array (H, W) grey or (H, W, 3|4) colour, written with zlib."""
    h, w = pixels.shape[:2]
    channels = 1 if pixels.ndim == 2 else pixels.shape[2]
    depth = 16 if pixels.dtype == np.uint16 else 8
    colour = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    rows = pixels.astype(pixels.dtype.newbyteorder(">")).reshape(h, -1).view(np.uint8).reshape(h, -1)
    raw = b"".join(b"\x00" + row.tobytes() for row in rows)

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, colour, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def random_image(p):
    """The bytes of one image and its extension: PNG or JPEG, any size and colour type, now and then damaged."""
    h, w = p.one(1, 2, 5, 16, 33, 100), p.one(1, 3, 16, 40, 100)
    channels = p.one(1, 2, 3, 3, 4)
    rng = np.random.default_rng(p.rng.randrange(1 << 30))
    pixels = rng.integers(0, 256, (h, w, channels), dtype=np.uint8)
    if channels == 1: pixels = pixels[:, :, 0]
    if Image is not None and channels in (1, 3) and p.maybe(.4):
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, "JPEG", quality=p.one(10, 90))
        blob, extension = buffer.getvalue(), p.one(".jpg", ".jpeg", ".JPG")
    else:
        if channels == 1 and p.maybe(.3): pixels = pixels.astype(np.uint16) * 257
        blob, extension = png_bytes(pixels), p.one(".png", ".PNG")
    if p.maybe(.04): blob = blob[:p.rng.randrange(1, len(blob))]
    if p.maybe(.02): blob = b""
    return blob, extension


def write_image_folder(p, folder, name):
    """A folder of class folders of random images, with the odd note, hidden file or image in the
    root; sometimes a validation folder beside it. The data part reading them."""
    root = os.path.join(folder, name)
    classes = ["c%d" % k for k in range(p.one(1, 2, 3, 5))]
    if p.maybe(.2): classes[0] = p.one("Cat", "naïve", "a b", "001")
    data = {"source": "image_folder", "path": root}
    for part, share in (("train", 1.0), ("val", .3)):
        if not p.maybe(share): continue
        base = root if part == "train" else root + "-val"
        for c in classes:
            os.makedirs(os.path.join(base, c), exist_ok=True)
            for k in range(p.one(0, 1, 2, 4, 9) if p.maybe(.1) else p.one(1, 2, 4, 9)):
                blob, extension = random_image(p)
                with open(os.path.join(base, c, "%d%s" % (k, extension)), "wb") as f: f.write(blob)
        if p.maybe(.1): open(os.path.join(base, "README.txt"), "w").write("notes\n")
        if p.maybe(.1): open(os.path.join(base, classes[0], ".DS_Store"), "wb").write(b"\0")
        if p.maybe(.05): open(os.path.join(base, classes[-1], "x.webp"), "wb").write(b"RIFF")
        if part == "val": data["val_path"] = base
    data["image_size"] = p.one(1, 4, 16, [8, 24], 32)
    for key, values in (("cache", ("auto", "ram", "none")), ("num_workers", (0, 2, "auto")), ("standardize", (True, False)),
                        ("crop_padding", (0, 2)), ("hflip", (True, False)), ("val_fraction", (0, 0.3))):
        if p.maybe(.3): data[key] = p.one(*values)
    return data
