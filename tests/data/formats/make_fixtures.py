"""Writes the dataset files the format tests (tests/unit/data) read, with the reference implementations themselves
(numpy, safetensors, Pillow, Python's gzip/bz2/lzma/zipfile/csv), so gputrain's readers are checked against what
users' tools really write, not against gputrain's own writer. Usage: make_fixtures.py OUT_DIR

Every array holds np.arange(60).reshape(3, 4, 5) in its dtype (bool: odd values), so the C++
test knows the expected values without reading anything else.
"""
import bz2
import csv
import datetime
import gzip
import lzma
import os
import struct
import sys
import zipfile

import numpy as np
from PIL import Image
from safetensors.numpy import save_file

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def path(*parts):
    p = os.path.join(out, *parts)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    return p


def reference(dtype):
    values = np.arange(60).reshape(3, 4, 5)
    return (values % 2).astype(dtype) if dtype == np.bool_ else values.astype(dtype)


# --- .npy: every numeric dtype, both byte orders, C and Fortran order, format versions 1-3 ---
DTYPES = ["b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"]
for code in DTYPES:
    for order in "<>":
        dt = np.dtype(code).newbyteorder(order) if np.dtype(code).itemsize > 1 else np.dtype(code)
        a = reference(np.dtype(code)).astype(dt)
        tag = "be" if order == ">" else "le"
        np.save(path("npy", f"{code}_{tag}_c.npy"), np.ascontiguousarray(a))
        np.save(path("npy", f"{code}_{tag}_f.npy"), np.asfortranarray(a))
for version in [(1, 0), (2, 0), (3, 0)]:
    with open(path("npy", f"version{version[0]}.npy"), "wb") as f:
        np.lib.format.write_array(f, reference(np.float32), version=version)
np.save(path("npy", "scalar_per_sample.npy"), np.arange(7, dtype=np.int64))

# Broken .npy files.
good = open(path("npy", "f4_le_c.npy"), "rb").read()
open(path("bad", "truncated.npy"), "wb").write(good[:-17])
open(path("bad", "not_npy.npy"), "wb").write(b"PK\x03\x04 definitely not numpy")
open(path("bad", "header_cut.npy"), "wb").write(good[:20])
np.save(path("bad", "object.npy"), np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
np.save(path("bad", "structured.npy"), np.zeros(3, dtype=[("x", "f4"), ("y", "i4")]))
np.save(path("bad", "dates.npy"), np.arange(4).astype("datetime64[s]"))  # numbers only once made so
np.save(path("bad", "zero_dim.npy"), np.float32(3.5))  # one value, shape (): no samples to index
# Headers a hostile file could hold: numpy refuses a header past 10000 bytes (max_header_size), and
# no dtype has an 11-digit item size.
with open(path("bad", "long_header.npy"), "wb") as f:
    text = ("{'descr': '<" + "f" * 300000 + "', 'fortran_order': False, 'shape': (4,), }").encode()
    text += b" " * ((16 - (12 + len(text) + 1) % 16) % 16) + b"\n"
    f.write(b"\x93NUMPY\x02\x00" + len(text).to_bytes(4, "little") + text + bytes(16))
with open(path("bad", "many_dims.npy"), "wb") as f:  # numpy arrays have at most 64 dimensions
    text = ("{'descr': '<f4', 'fortran_order': False, 'shape': (4, " + "1, " * 100 + "), }").encode()
    text += b" " * ((64 - (10 + len(text) + 1) % 64) % 64) + b"\n"
    f.write(b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + bytes(16))
with open(path("bad", "huge_itemsize.npy"), "wb") as f:
    text = b"{'descr': '<f99999999999', 'fortran_order': False, 'shape': (4,), }"
    text += b" " * ((64 - (10 + len(text) + 1) % 64) % 64) + b"\n"
    f.write(b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + bytes(16))
np.savez(path("bad", "empty.npz"), x=np.zeros((0, 6), np.float32), y=np.zeros(0, np.int64))  # a filter that kept nothing

# --- .npz, stored and deflated; features and labels under several keys ---
x = np.random.default_rng(0).standard_normal((50, 6)).astype(np.float32)
y = (np.arange(50) % 3).astype(np.int64)
np.savez(path("npz", "stored.npz"), x=x, y=y)
np.savez_compressed(path("npz", "deflated.npz"), features=x, labels=y)
np.savez(path("npz", "custom_keys.npz"), pixels=x, classes=y)
np.save(path("npz", "x.npy"), x)
np.save(path("npz", "y.npy"), y)
# Labels a classifier cannot take: -1 as a "missing" class (sample 4), and a float mid-way (sample 7).
np.save(path("bad", "negative_labels.npy"), np.where(np.arange(50) == 4, -1, y))
np.save(path("bad", "fractional_labels.npy"), np.where(np.arange(50) == 7, 1.5, y.astype(np.float64)))
# pandas' missing label (nan, samples 2 and 9), an overflow's inf (sample 1), and a float past any id.
np.save(path("bad", "missing_labels.npy"), np.where(np.isin(np.arange(50), [2, 9]), np.nan, y.astype(np.float64)))
np.save(path("bad", "infinite_labels.npy"), np.where(np.arange(50) == 1, np.inf, y.astype(np.float32)))
np.save(path("bad", "huge_labels.npy"), np.where(np.arange(50) == 1, 1e30, y.astype(np.float64)))
# Labels as class names (numpy's fixed-width unicode and bytes strings) and as one-hot rows.
np.save(path("bad", "name_labels.npy"), np.array(["cat", "dog", "bird"])[y])
np.save(path("bad", "bytes_labels.npy"), np.array([b"cat", b"dog", b"bird"])[y])
np.save(path("bad", "one_hot_labels.npy"), np.eye(3, dtype=np.float32)[y])
deflated = bytearray(open(path("npz", "deflated.npz"), "rb").read())
open(path("bad", "truncated.npz"), "wb").write(bytes(deflated[: len(deflated) // 2]))
flipped = bytearray(deflated)
flipped[200] ^= 0xFF  # inside the first member's compressed data
open(path("bad", "corrupt.npz"), "wb").write(bytes(flipped))
# Members whose data no longer matches their CRC-32, as numpy refuses them: a stored member with a
# byte of its array changed, and a deflated one whose recorded CRC-32 (local header and central
# directory) is off by a bit while its stream inflates cleanly.
stored = bytearray(open(path("npz", "stored.npz"), "rb").read())
magic = stored.index(b"\x93NUMPY")
stored[magic + 10 + (stored[magic + 8] | stored[magic + 9] << 8) + 5] ^= 0x01
open(path("bad", "stored_crc.npz"), "wb").write(bytes(stored))
wrong_crc = bytearray(deflated)
wrong_crc[14] ^= 0x01
wrong_crc[wrong_crc.index(b"PK\x01\x02") + 16] ^= 0x01
open(path("bad", "deflated_crc.npz"), "wb").write(bytes(wrong_crc))

# --- safetensors ---
save_file({"x": x, "y": y}, path("safetensors", "train.safetensors"))
st = open(path("safetensors", "train.safetensors"), "rb").read()
open(path("bad", "truncated.safetensors"), "wb").write(st[:-40])
open(path("bad", "huge_header.safetensors"), "wb").write(struct.pack("<Q", 1 << 40) + st[8:])
open(path("bad", "not_json.safetensors"), "wb").write(struct.pack("<Q", 8) + b"{nope!!}" + b"\0" * 16)

# --- CSV ---
with open(path("csv", "iris.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["sepal_length", "sepal_width", "note", "species"])
    rows = [(5.1, 3.5, "a, b", "setosa"), (7.0, 3.2, "x", "versicolor"), (6.3, 3.3, "", "virginica"), (4.9, 3.0, "y", "setosa")]
    for r in rows:
        w.writerow(r)
with open(path("csv", "iris_val_unknown_class.csv"), "w", newline="") as f:  # a class the training file lacks
    csv.writer(f).writerows([["sepal_length", "sepal_width", "note", "species"], (5.0, 3.4, "", "setosa"), (5.9, 3.0, "", "virginca")])
with open(path("csv", "numeric.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["a", "b", "label"])
    for i in range(10):
        w.writerow([i, i * 0.5, i % 2])
# Spreadsheet exports: "CSV UTF-8" (a byte-order mark, CRLF; pandas' encoding="utf-8-sig" too) and
# "Unicode text" (UTF-16).
for name, encoding in [("excel_utf8_bom.csv", "utf-8-sig"), ("excel_utf16.csv", "utf-16")]:
    with open(path("csv", name), "w", newline="", encoding=encoding) as f:
        csv.writer(f, dialect="excel").writerows([["a", "b", "label"], [1, 2, 0], [3, 4, 1]])
# Classic Mac OS line breaks, '\r' alone (Excel for Mac's "CSV (Macintosh)"), which pandas reads.
with open(path("csv", "mac_line_breaks.csv"), "w", newline="") as f:
    csv.writer(f, lineterminator="\r").writerows([["a", "b", "label"], [1, 2, 0], [3, 4, 1], [5, 6, 0]])
# Unnamed header cells: pandas' to_csv(index=True) writes the row index first under no name; some
# tools end every line with the delimiter. A validation file may order its columns differently.
with open(path("csv", "pandas_index.csv"), "w", newline="") as f:
    csv.writer(f).writerows([["", "a", "b", "label"]] + [[i, 10 + i, 20 + i, i % 2] for i in range(4)])
with open(path("csv", "trailing_delimiter.csv"), "w", newline="") as f:
    csv.writer(f).writerows([["a", "b", "label", ""]] + [[10 + i, 20 + i, i % 2, ""] for i in range(4)])
with open(path("csv", "val_reordered.csv"), "w", newline="") as f:
    csv.writer(f).writerows([["label", "b", "a"]] + [[i % 2, 20 + i, 10 + i] for i in range(3)])
# A name YAML would misread (a comment after " #", a mapping after ": "): flags must keep it whole.
with open(path("csv", "run #2: numeric.csv"), "w", newline="") as f:
    csv.writer(f).writerows([["a", "b", "y1", "y2"]] + [[i, i * 0.5, i % 3, i * 0.1] for i in range(12)])
# A free-text column as Python's csv and pandas write it: quoted cells holding line breaks, the
# delimiter and quotes (""), and a quote inside a plain cell (12" pipe) that is only text.
with open(path("csv", "free_text.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["a", "note", "b", "label"])
    w.writerow([1, "line one\nline two, with a comma", 2, 0])
    w.writerow([3, 'says "hi"', 4, 1])
    w.writerow([5, "plain", 6, 0])
    w.writerow([7, "first\n\nthird line", 8, 1])
with open(path("csv", "free_text.csv"), "a", newline="") as f:
    f.write('9,12" pipe,10,0\r\n')  # what csv.writer never writes, but a hand-made file does
with open(path("bad", "free_text_bad_cell.csv"), "w", newline="") as f:
    csv.writer(f).writerows([["a", "note", "b", "label"], [1, "one\ntwo\nthree", "oops", 0]])
with open(path("bad", "unclosed_quote.csv"), "w", newline="") as f:  # a quote typed by hand, never closed
    f.write('a,b,label\n1,2,0\n"3,4,1\n5,6,0\n')
with open(path("bad", "bad_cell.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["a", "b", "label"])
    w.writerow([1, 2, 0])
    w.writerow([3, "oops", 1])
with open(path("bad", "not_finite.csv"), "w", newline="") as f:  # pandas writes missing values as NaN
    w = csv.writer(f)
    w.writerow(["a", "b", "label"])
    w.writerow([1, 2, 0])
    w.writerow([3, float("nan"), 1])
    w.writerow([1e39, 2, 0])  # beyond float32
with open(path("bad", "empty_cells.csv"), "w", newline="") as f:  # csv and spreadsheets write a missing value as nothing
    w = csv.writer(f)
    w.writerow(["a", "b", "label"])
    w.writerow([1, None, 0])
    w.writerow([2, 3, None])
# Missing values as tools write them: nothing (Python's csv for None, pandas for NaN) and NA (R's
# write.csv), in two columns of ten rows.
with open(path("bad", "missing_values.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["a", "b", "c", "label"])
    for i in range(10):
        w.writerow([i * 0.5, None if i in (2, 5) else i, "NA" if i == 7 else 1.5, i % 2])
# Boolean columns: Python's csv and pandas' to_csv write a bool as True/False, R's write.csv as
# TRUE/FALSE.
with open(path("csv", "booleans.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["a", "member", "active", "label"])
    for i in range(6):
        w.writerow([i, i % 2 == 1, "TRUE" if i % 3 == 0 else "FALSE", i % 2])
# Numbers written for people: a German-locale spreadsheet's export (';' between cells, a decimal
# comma), and thousands separators, which Python's csv quotes in a ','-separated file.
with open(path("bad", "decimal_comma.csv"), "w", newline="") as f:
    csv.writer(f, delimiter=";").writerows([["a", "b", "label"], ["3,5", "1,25", 0], ["4,0", "2,5", 1]])
with open(path("bad", "thousands.csv"), "w", newline="") as f:
    csv.writer(f).writerows([["a", "b", "price"], [1, 2, "1,234.5"], [3, 4, "12,345,678"]])
# A table as exported from a database: a timestamp as ISO text (Python's datetime) and a
# category beside the numbers.
with open(path("bad", "text_columns.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["id", "when", "temp", "city", "load"])
    start = datetime.datetime(2024, 1, 1)
    for i in range(4):
        w.writerow([i, start + datetime.timedelta(hours=i), 15.5 + i, ["Paris", "Rome"][i % 2], 40.25 + i])
# Spreadsheets in many locales save with ';', and tab-separated files are common: same data as numeric.csv.
for name, delimiter in (("semicolons.csv", ";"), ("tabs.tsv", "\t")):
    with open(path("csv", name), "w", newline="") as f:
        w = csv.writer(f, delimiter=delimiter)
        w.writerow(["a", "b", "label"])
        for i in range(10):
            w.writerow([i, i * 0.5, i % 2])

# Compressed CSVs. gzip'd, as pandas' to_csv("x.csv.gz") writes it (Python's gzip), and two gzip
# members one after the other (`cat a.gz b.gz`), which gzip -d reads as one file; the others are
# refused with the command that makes text of them.
numeric = open(path("csv", "numeric.csv"), "rb").read()
with gzip.open(path("csv", "numeric.csv.gz"), "wb") as f:
    f.write(numeric)
half = numeric.index(b"\n", len(numeric) // 2) + 1
with open(path("csv", "numeric_two_members.csv.gz"), "wb") as f:
    f.write(gzip.compress(numeric[:half]) + gzip.compress(numeric[half:]))
whole = gzip.compress(numeric)
open(path("bad", "numeric_cut.csv.gz"), "wb").write(whole[: len(whole) // 2])
open(path("bad", "numeric.csv.bz2"), "wb").write(bz2.compress(numeric))
open(path("bad", "numeric.csv.xz"), "wb").write(lzma.compress(numeric))
with zipfile.ZipFile(path("bad", "numeric.zip"), "w") as z:
    z.writestr("numeric.csv", numeric)
np.save(path("bad", "array_named.csv"), np.arange(12, dtype=np.float32))  # np.save adds .npy to the name
os.replace(path("bad", "array_named.csv.npy"), path("bad", "array_named.csv"))

# --- MNIST IDX (big-endian header, as the MNIST site ships them; plain and gzip) ---
images = (np.arange(5 * 28 * 28) % 251).astype(np.uint8).reshape(5, 28, 28)
labels = np.array([3, 1, 4, 1, 5], dtype=np.uint8)
def idx(array, type_code):
    header = struct.pack(">BBBB", 0, 0, type_code, array.ndim) + b"".join(struct.pack(">I", d) for d in array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()
open(path("mnist", "train-images-idx3-ubyte"), "wb").write(idx(images, 0x08))
open(path("mnist", "train-labels-idx1-ubyte"), "wb").write(idx(labels, 0x08))
with gzip.open(path("mnist", "t10k-images-idx3-ubyte.gz"), "wb") as f:
    f.write(idx(images[:2], 0x08))
with gzip.open(path("mnist", "t10k-labels-idx1-ubyte.gz"), "wb") as f:
    f.write(idx(labels[:2], 0x08))
open(path("idx", "floats.idx"), "wb").write(idx(np.arange(6, dtype=np.float32).reshape(2, 3), 0x0D))
open(path("idx", "shorts.idx"), "wb").write(idx(np.array([-2, 300, 7], dtype=np.int16), 0x0B))
open(path("bad", "truncated-images-idx3-ubyte"), "wb").write(idx(images, 0x08)[:-100])

# --- CIFAR-10 binary batches: label byte + 3072 pixel bytes per record ---
rng = np.random.default_rng(1)
for name, n in [("data_batch_1.bin", 4), ("data_batch_2.bin", 3), ("test_batch.bin", 2)]:
    px = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
    lab = rng.integers(0, 10, (n, 1), dtype=np.uint8)
    np.hstack([lab, px]).tofile(path("cifar", name))
    np.save(path("cifar", name + ".pixels.npy"), px.reshape(n, 3, 32, 32))
    np.save(path("cifar", name + ".labels.npy"), lab.reshape(n).astype(np.int64))
open(path("bad", "cifar", "data_batch_1.bin"), "wb").write(b"\0" * 3000)

# --- Images, written by Pillow ---
gradient = np.zeros((16, 24, 3), dtype=np.uint8)
gradient[..., 0] = np.arange(24)[None, :] * 10
gradient[..., 1] = np.arange(16)[:, None] * 15
gradient[..., 2] = 128
Image.fromarray(gradient).save(path("images", "exact", "rgb.png"))
Image.fromarray(gradient[..., 1]).save(path("images", "exact", "grey.png"))
rgba = np.dstack([gradient, np.full((16, 24), 255, np.uint8)])
Image.fromarray(rgba, "RGBA").save(path("images", "exact", "rgba.png"))
Image.fromarray(gradient).convert("P", palette=Image.Palette.ADAPTIVE, colors=64).save(path("images", "exact", "palette.png"))
Image.fromarray(gradient).save(path("images", "exact", "rgb.jpg"), quality=95)
Image.fromarray(gradient[..., 1]).save(path("images", "exact", "grey.jpg"), quality=95)
# CMYK with every ink and black varying (Pillow writes Adobe's inverted CMYK, as Photoshop does).
cmyk = np.dstack([gradient, (np.arange(16)[:, None] * 8 + np.arange(24)[None, :] * 4).astype(np.uint8)])
Image.fromarray(cmyk, "CMYK").save(path("images", "exact", "cmyk.jpg"), quality=95)
# A JPEG cut short, which Pillow refuses ("image file is truncated") and libjpeg alone would fill grey.
noise = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
Image.fromarray(noise).save(path("bad", "truncated.jpg"), quality=90)
whole = open(path("bad", "truncated.jpg"), "rb").read()
open(path("bad", "truncated.jpg"), "wb").write(whole[: len(whole) * 6 // 10])
try:
    Image.open(path("bad", "truncated.jpg")).load()
    sys.exit("Pillow read the truncated JPEG: the fixture no longer shows what it should")
except OSError:
    pass
# What Pillow decodes, CHW: the test compares ours to it (exactly for PNG, closely for JPEG).
for name in ["rgb.png", "grey.png", "rgba.png", "palette.png", "rgb.jpg", "grey.jpg", "cmyk.jpg"]:
    decoded = np.asarray(Image.open(path("images", "exact", name)).convert("RGB"))
    np.save(path("images", "exact", name + ".npy"), np.ascontiguousarray(decoded.transpose(2, 0, 1)))

# Resized by docs/examples/predict.py's image_sample (what docs/data.md promises Python users): down
# and up, wider and taller than the target, one axis only, and JPEGs large enough to be decoded at
# 1/2 and 1/8 scale in the DCT. File name: image, then the target. Pillow's own resize agrees within
# a level (Pillow 13 sometimes resamples rows first), which is checked here too.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs", "examples"))
from predict import image_sample  # noqa: E402

texture = np.random.default_rng(11)
for name, (h, w), (th, tw) in [("down.png", (75, 101), (24, 20)), ("up.png", (9, 13), (32, 40)), ("rows.png", (61, 40), (30, 40)),
                               ("columns.png", (40, 61), (40, 17)), ("odd.png", (33, 47), (31, 7)), ("half.jpg", (150, 210), (64, 64)),
                               ("eighth.jpg", (403, 517), (48, 40))]:
    ys, xs = np.mgrid[0:h, 0:w]
    smooth = np.dstack([(ys * 255 // h), (xs * 255 // w), ((ys + xs) * 97 % 256)]).astype(np.int64)
    pixels = np.clip(smooth + texture.integers(-40, 41, (h, w, 3)), 0, 255).astype(np.uint8)
    file = path("images", "resize", name)
    Image.fromarray(pixels).save(file, **({"quality": 92} if name.endswith(".jpg") else {}))
    sample = image_sample(file, th, tw)
    np.save(file + f".{th}x{tw}.npy", sample)
    if name.endswith(".png"):  # Pillow's resize and crop of the same file
        img = Image.open(file).convert("RGB")
        wide = tw * img.height >= th * img.width
        size = (tw, (2 * img.height * tw + img.width) // (2 * img.width)) if wide else \
            ((2 * img.width * th + img.height) // (2 * img.height), th)
        left, top = (size[0] - tw) // 2, (size[1] - th) // 2
        pillow = np.asarray(img.resize(size, Image.Resampling.BILINEAR).crop((left, top, left + tw, top + th))).transpose(2, 0, 1)
        if np.abs(pillow.astype(int) - sample).max() > 1:
            sys.exit(f"{name}: image_sample and Pillow's resize differ by more than a level")

# A 1-pixel checkerboard, for downscaling: its average is mid-grey.
checker = ((np.indices((256, 256)).sum(axis=0) % 2) * 255).astype(np.uint8)
Image.fromarray(np.dstack([checker] * 3)).save(path("images", "checker.png"))

# A class-per-folder tree with one corrupt file and one non-image.
for c, colour in [("cat", (200, 30, 30)), ("dog", (30, 30, 200))]:
    for i in range(3):
        img = np.full((40 + 8 * i, 30 + 4 * i, 3), colour, dtype=np.uint8)
        fmt = "png" if i == 1 else "jpg"
        Image.fromarray(img).save(path("folder", "train", c, f"{i}.{fmt}"))
    Image.fromarray(np.full((20, 20, 3), colour, dtype=np.uint8)).save(path("folder", "val", c, "0.jpg"))
jpeg = open(path("folder", "train", "cat", "0.jpg"), "rb").read()
open(path("folder", "train", "cat", "broken.jpg"), "wb").write(jpeg[:60])
open(path("folder", "train", "dog", "empty.png"), "wb").close()
open(path("folder", "train", "dog", "README.txt"), "w").write("not an image\n")
# Images in formats not decoded: said so with a conversion, unless converted already (a .png beside).
Image.fromarray(np.full((20, 20, 3), (30, 30, 200), dtype=np.uint8)).save(path("folder", "train", "dog", "3.bmp"))
Image.fromarray(np.full((20, 20, 3), (30, 30, 200), dtype=np.uint8)).save(path("folder", "train", "dog", "4.webp"))
Image.fromarray(np.full((20, 20, 3), (200, 30, 30), dtype=np.uint8)).save(path("folder", "train", "cat", "1.webp"))
open(path("folder", "train", "cat", "Thumbs.db"), "wb").write(b"\xd0\xcf\x11\xe0")  # Windows' thumbnails
# What tools leave behind: neither a class nor a file to mention.
open(path("folder", "train", "dog", ".DS_Store"), "wb").write(b"\0\0\0\1Bud1")
Image.fromarray(np.full((20, 20, 3), (30, 30, 200), dtype=np.uint8)).save(path("folder", "train", ".ipynb_checkpoints", "0.jpg"))
Image.fromarray(np.full((20, 20, 3), (30, 30, 200), dtype=np.uint8)).save(path("folder", "train", "cat", ".thumbs", "0.jpg"))
print("fixtures written to", out)

# --- Not checkpoints: a Python torch.save file (a pickle in a zip) that checkpoint.resume refuses ---
import torch  # noqa: E402  (only here: the other fixtures need no torch)

torch.save({"weight": torch.zeros(2, 3)}, path("checkpoints", "python_torch_save.pt"))
save_file({"weight": np.zeros((2, 3), np.float32)}, path("checkpoints", "weights.safetensors"))

# --- state_dicts as Python writes them: an OrderedDict with _metadata (torchvision's .pth), a
# Lightning-style checkpoint dict, and one in pickle protocol 4, which gputrain does not rewrite ---
state = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2)).state_dict()
torch.save(state, path("checkpoints", "state_dict.pth"))
torch.save({"epoch": 4, "state_dict": {"model." + k: v for k, v in state.items()}}, path("checkpoints", "lightning.ckpt"))
torch.save(state, path("checkpoints", "protocol4.pth"), pickle_protocol=4)
# The same weights as complex numbers, which a real model could take only by dropping a part.
torch.save({k: v.to(torch.complex64) if v.is_floating_point() else v for k, v in state.items()}, path("checkpoints", "complex.pth"))
# gputrain's mlp (hidden [4], 3 features, 2 classes) as Python builds it, saved from under DDP's
# "module." prefix: --evaluate takes such a state_dict as it is.
torch.manual_seed(0)
mlp = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
torch.save({"module." + k: v for k, v in mlp.state_dict().items()}, path("checkpoints", "mlp_state_dict.pth"))

# --- A TorchScript archive whose code LibTorch cannot compile (its code/ records left out, as a
# module whose classes this LibTorch does not know): model.torchscript refuses it, naming why ---
import io  # noqa: E402
import zipfile  # noqa: E402

scripted = io.BytesIO()
torch.jit.save(torch.jit.script(torch.nn.Linear(4, 2)), scripted)
with zipfile.ZipFile(scripted) as whole, zipfile.ZipFile(path("checkpoints", "script_without_code.pt"), "w") as cut:
    for record in whole.infolist():
        if "/code/" not in record.filename:
            cut.writestr(record, whole.read(record.filename))

# --- A state_dict whose pickle's first memo slot is LONG_BINPUT 1,734,241,634: LibTorch's unpickler
# made room for every slot up to it (27 GB) from this 1 kB file; refused as damaged before it ---
with zipfile.ZipFile(path("checkpoints", "state_dict.pth")) as whole, \
        zipfile.ZipFile(path("checkpoints", "memo_slot_past_the_pickle.pth"), "w") as bad:
    for record in whole.infolist():
        data = whole.read(record.filename)
        if record.filename.endswith("/data.pkl"):
            slot = b"OrderedDict\nq\x00"  # the GLOBAL, then BINPUT 0
            assert slot in data, data[:40]
            data = data.replace(slot, b"OrderedDict\nr" + (0x675F6D62).to_bytes(4, "little"), 1)
        bad.writestr(record, data)

# --- TorchScript modules model.torchscript refuses before training, each for one reason ---


class IntegerOutputs(torch.nn.Module):  # logits cast to int64
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(2))

    def forward(self, x):
        return (x[:, :1] * self.w).long()


class NoParameters(torch.nn.Module):
    def forward(self, x):
        return x[:, :1] * 2.0


class DoubleWeights(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(2, dtype=torch.float64))

    def forward(self, x):
        return x[:, :1] * self.w.float()


class PredictOnly(torch.nn.Module):  # exported for inference under another name
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(2))

    @torch.jit.export
    def predict(self, x):
        return x[:, :1] * self.w


class DivergedWeights(torch.nn.Module):  # saved after its run diverged
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([1.0, float("inf")]))

    def forward(self, x):
        return x[:, :1] * self.w


frozen = IntegerOutputs()
frozen.w.requires_grad_(False)
for name, module in [("script_integer_outputs", IntegerOutputs()), ("script_no_parameters", NoParameters()),
                     ("script_double_weights", DoubleWeights()), ("script_predict_only", PredictOnly()),
                     ("script_diverged_weights", DivergedWeights())]:
    torch.jit.script(module).save(path("checkpoints", name + ".pt"))
torch.jit.save(torch.jit.script(frozen), path("checkpoints", "script_frozen.pt"))
