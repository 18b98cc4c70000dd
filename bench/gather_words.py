#!/usr/bin/env python3
"""The VRAM cache's gather, by word width, against the device-to-device copy (issue #5's goal:
batch gathering at >= 50 % of the copy's bandwidth).

gputrain's cache gathers a chunk of rows with `index_select` over the rows viewed as 8-byte words
(src/data/device_cache.cpp: one element per GPU thread, so the word is what one thread moves).
This times the same kernel from PyTorch (LibTorch's, the one gputrain calls) on the rows viewed as
bytes, 8-byte words and 16-byte words (complex128: a view, the bits copied unchanged), and
advanced indexing (`rows[indices]`, another of LibTorch's gather kernels), at the
chunk sizes the feed uses and larger, in a CUDA graph of gathers from 8 index sets replayed back
to back, timed with CUDA events (so neither Python's launch time nor one cached index set counts). Bandwidth counts the bytes
of the rows gathered, as the copy counts the bytes copied.

Usage: bench/gather_words.py [--reps 50] [--check]
  --check: on the CPU, small: every word view gathers the same bytes (random bytes, so NaN
           payloads in the 16-byte view too); the test suite runs it.
"""
import argparse
import statistics
import sys
import time

import torch

CASES = {"tabular": (200_000, 1024), "cifar": (50_000, 3072)}  # rows, bytes a row
CHUNKS = (1024, 6144, 24576, 65536)
WORDS = {"bytes": torch.uint8, "8-byte": torch.int64, "16-byte": torch.complex128}
# (label, word, how): index_select is what gputrain calls; advanced indexing (rows[indices]) is
# another of LibTorch's gather kernels (TensorIterator's, several elements a thread).
VARIANTS = [("index_select, bytes", "bytes", "index_select"), ("index_select, 8-byte", "8-byte", "index_select"),
            ("index_select, 16-byte", "16-byte", "index_select"), ("rows[i], 8-byte", "8-byte", "index"),
            ("rows[i], 16-byte", "16-byte", "index")]


def gather(words, indices, how, out=None):
    if how == "index_select":
        return torch.index_select(words, 0, indices, out=out)
    return words[indices]


def as_words(rows, dtype):
    return rows.view(rows.size(0), -1).view(dtype)


def gather_ms(calls, reps):
    """Median ms of one call: the calls (one gather per index set) captured in a CUDA graph, so
    Python's launch time stays out, and the graph replayed back to back, 5 groups."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for call in calls:  # warm-up outside the capture
            call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for call in calls:
            call()
    replays = max(1, reps // len(calls))
    groups = []
    for _ in range(5):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(replays):
            graph.replay()
        end.record()
        end.synchronize()
        groups.append(begin.elapsed_time(end) / (replays * len(calls)))
    return statistics.median(groups)


def check():
    gen = torch.Generator().manual_seed(0)
    for name, (rows, row_bytes) in CASES.items():
        table = torch.randint(0, 256, (rows // 100, row_bytes), dtype=torch.uint8, generator=gen)
        index = torch.randperm(table.size(0), generator=gen)[:257]
        want = table.index_select(0, index)
        for label, word, how in VARIANTS:
            got = gather(as_words(table, WORDS[word]), index, how).view(torch.uint8).view(want.shape)
            if not torch.equal(got, want):
                sys.exit(f"{name}: {label} changed the bytes")
        print(f"{name}: every variant gathers the same {want.numel()} bytes")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.check:
        check()
        return
    if not torch.cuda.is_available():
        sys.exit("no GPU: this benchmark times the GPU's gather (--check runs on the CPU)")
    device = "cuda"
    big = torch.randint(0, 256, (1 << 30,), dtype=torch.uint8, device=device)
    copy_to = torch.empty_like(big)
    copy_gbps = big.numel() / 1e6 / gather_ms([lambda: copy_to.copy_(big)], 10)
    del big, copy_to
    print(f"# gather by word width, {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"{time.strftime('%Y-%m-%d')}; device-to-device copy {copy_gbps:.0f} GB/s (1 GiB, CUDA events)")
    print("| case | rows a gather | MiB | " + " | ".join(f"{label}: GB/s (% of copy)" for label, _, _ in VARIANTS) + " |")
    print("| --- | ---: | ---: | " + " | ".join("---:" for _ in VARIANTS) + " |")
    gen = torch.Generator().manual_seed(0)
    for name, (rows, row_bytes) in CASES.items():
        table = torch.randint(0, 256, (rows, row_bytes), dtype=torch.uint8, generator=gen).to(device)
        for chunk in CHUNKS:
            sets = [torch.randperm(rows, generator=gen)[:chunk].to(device) for _ in range(8)]
            cells = []
            for _, word, how in VARIANTS:
                words = as_words(table, WORDS[word])
                out = torch.empty((chunk, words.size(1)), dtype=words.dtype, device=device) if how == "index_select" else None
                calls = [lambda i=i, words=words, out=out, how=how: gather(words, i, how, out) for i in sets]
                ms = gather_ms(calls, args.reps)
                gbps = chunk * row_bytes / 1e6 / ms
                cells.append(f"{gbps:.0f} ({100 * gbps / copy_gbps:.0f} %)")
            print(f"| {name} | {chunk} | {chunk * row_bytes / 2**20:.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
