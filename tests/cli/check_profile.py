#!/usr/bin/env python3
"""Checks what `gputrain profile` prints for machines: the loader sweep's JSON and CSV and its SVG
chart, and --step's JSON (schemas in docs/profiling.md).

Usage: check_profile.py MODE [FILE] -- GPUTRAIN_PROFILE_COMMAND...
Modes:
  sweep-json [NAME] the sweep's JSON: every setting, medians, one best that is the fastest, speed-ups;
                    with NAME, the dataset it names starts with NAME (e.g. "npy x.npy": the source
                    told from the path)
  sweep-csv SVG     --csv output with one row per setting, and the --plot SVG parses with a line
  step-json [DIR]   --step's JSON: every field documented in docs/profiling.md and every documented one
                    written; the step split into data wait and compute, the stall in percent,
                    the host's time and operators per step, whether the steps were captured;
                    with DIR (the config's checkpoint.dir and train.profile.dir), nothing was written there; the folder a
                    killed --step left in TMPDIR is removed
  plot-png PNG      --plot PNG writes a PNG (rendered by librsvg) of twice the SVG's size
  step-trace-counts --step's operator count is the same with --trace (the traced steps come after
                    the counted ones and are not counted)
"""
import csv
import io
import json
import os
import re
import struct
import subprocess
import sys
import xml.dom.minidom

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail  # noqa: E402


def documented_step_fields():
    """The keys docs/profiling.md's `--json` paragraph of --step names (backticked, lower case)."""
    docs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "profiling.md")
    with open(docs) as f:
        text = f.read()
    start = text.index("`--json` (schema `gputrain.profile.step/1`)")
    paragraph = text[start:text.index("\n\n", start)]
    return set(re.findall(r"`([a-z][a-z0-9_]*)`", paragraph))


def run(command):
    print("+ " + " ".join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True)
    sys.stderr.write(result.stderr)
    if result.returncode != 0:
        fail(f"exit code {result.returncode}:\n{result.stdout}")
    return result.stdout


def check_sweep(doc):
    if doc.get("schema") != "gputrain.profile.loader/1":
        fail("schema: " + str(doc.get("schema")))
    for key in ["device", "dataset", "samples", "sample_bytes", "batch_size", "pinned_copy_gbps", "device_copy_gbps", "results", "best", "yaml"]:
        if key not in doc:
            fail("missing key " + key)
    # The two copy ceilings are a GPU's: measured there, 0 on the CPU.
    for key in ["pinned_copy_gbps", "device_copy_gbps"]:
        if (doc[key] > 0) != (doc["device"] != "cpu"):
            fail(f"{key} {doc[key]} on {doc['device']}")
    results = doc["results"]
    if len(results) < 2:
        fail("fewer than two settings were tried")
    keys = {"workers", "pin_memory", "prefetch", "cache", "batches_per_second", "batches_per_second_runs",
            "samples_per_second", "megabytes_per_second", "speedup", "gather_gbps", "gather_rows", "best"}
    for r in results:
        if set(r) != keys:
            fail("result keys: " + str(sorted(r)))
        runs = sorted(r["batches_per_second_runs"])
        median = runs[len(runs) // 2] if len(runs) % 2 else (runs[len(runs) // 2 - 1] + runs[len(runs) // 2]) / 2
        if abs(median - r["batches_per_second"]) > 1e-6 * max(1, median):
            fail("batches_per_second is not the median of its runs")
        if r["samples_per_second"] <= 0:
            fail("a setting delivered nothing")
        # The gather alone is timed for the caches, and only for them.
        if (r["gather_gbps"] > 0) != (r["cache"] != "none"):
            fail(f"gather_gbps {r['gather_gbps']} for cache {r['cache']}")
        # On the CPU a cache's feed gathers one batch at a time; the loader gathers nothing.
        expected_rows = min(doc["batch_size"], doc["samples"]) if r["cache"] != "none" and doc["device"] == "cpu" else None
        if expected_rows is not None and r["gather_rows"] != expected_rows:
            fail(f"gather_rows {r['gather_rows']} for cache {r['cache']} on the CPU (expected {expected_rows})")
        if r["cache"] == "none" and r["gather_rows"] != 0:
            fail(f"gather_rows {r['gather_rows']} for the loader")
    if results[0]["workers"] != 0 or results[0]["cache"] != "none" or abs(results[0]["speedup"] - 1) > 1e-9:
        fail("the first setting is not the baseline (0 threads, no cache, speed-up 1)")
    best = [r for r in results if r["best"]]
    if len(best) != 1:
        fail(f"{len(best)} settings marked best")
    # The first setting within 5 % of the fastest (src/profile/loader_sweep.cpp: as fast, for fewer
    # threads and less memory); "the fastest" alone failed whenever timing noise put a later setting ahead.
    fastest = max(r["samples_per_second"] for r in results)
    first_as_fast = next(r for r in results if r["samples_per_second"] >= (1 - 0.05) * fastest)
    if best[0] is not first_as_fast:
        fail("the best setting is not the first within 5 % of the fastest")
    if best[0] != doc["best"]:
        fail("'best' differs from the result marked best")
    if not doc["yaml"].startswith("data:\n  cache: " + best[0]["cache"]):
        fail("yaml: " + doc["yaml"])
    print(f"ok: {len(results)} settings, best {best[0]['cache']} with {best[0]['workers']} threads, "
          f"{best[0]['speedup']:.2f}x the baseline")


def main():
    mode = sys.argv[1]
    command = sys.argv[sys.argv.index("--") + 1:]
    if mode == "sweep-json":
        doc = json.loads(run(command))
        check_sweep(doc)
        if sys.argv[2] != "--" and not doc["dataset"].startswith(sys.argv[2]):
            fail(f"dataset {doc['dataset']!r}, expected {sys.argv[2]!r}...")
    elif mode == "sweep-csv":
        svg = sys.argv[2]
        rows = list(csv.DictReader(io.StringIO(run(command + ["--plot", svg]))))
        if len(rows) < 2 or sum(r["best"] == "true" for r in rows) != 1:
            fail("CSV rows: " + str(rows))
        doc = xml.dom.minidom.parse(svg)
        if not doc.getElementsByTagName("polyline"):
            fail("the chart has no line")
        print(f"ok: {len(rows)} CSV rows, chart with {len(doc.getElementsByTagName('polyline'))} lines")
    elif mode == "plot-png":
        png = sys.argv[2]
        run(command + ["--plot", png])
        data = open(png, "rb").read()
        if data[:8] != b"\x89PNG\r\n\x1a\n":
            fail("not a PNG")
        width, height = struct.unpack(">II", data[16:24])
        if (width, height) != (1280, 800):
            fail(f"PNG of {width}x{height}, expected 1280x800")
        print(f"ok: PNG {width}x{height}, {len(data)} bytes")
    elif mode == "step-json":
        # The folder a killed --step left behind (its process gone) is removed by the next one;
        # a live process's is not.
        temp = os.environ.get("TMPDIR", "/tmp")
        dead = subprocess.Popen(["true"])
        dead.wait()
        stale = os.path.join(temp, f"gputrain-profile-step-{dead.pid}")
        alive = os.path.join(temp, f"gputrain-profile-step-{os.getpid()}")
        for folder in (stale, alive):
            os.makedirs(folder, exist_ok=True)
            open(os.path.join(folder, "metrics.jsonl"), "w").close()
        doc = json.loads(run(command))
        if os.path.exists(stale):
            fail(f"the folder of a killed --step is still there: {stale}")
        if not os.path.isdir(alive):
            fail("the folder of a running process was removed")
        os.remove(os.path.join(alive, "metrics.jsonl"))
        os.rmdir(alive)
        untouched = sys.argv[2] if sys.argv[2] != "--" else None
        if untouched and os.path.isdir(untouched) and os.listdir(untouched):
            fail(f"profile --step wrote into the config's checkpoint.dir or train.profile.dir: {os.listdir(untouched)}")
        if doc.get("schema") != "gputrain.profile.step/1":
            fail("schema")
        # Every field is in the docs, and every field the docs name (a key's underscore tells it
        # from a value such as `on`) is written.
        named = documented_step_fields()
        undocumented = set(doc) - named - {"schema"}
        unwritten = {n for n in named if "_" in n} - set(doc)
        if undocumented or unwritten:
            fail(f"--step's JSON and docs/profiling.md differ: not in the docs {sorted(undocumented)}, not written {sorted(unwritten)}")
        if doc["steps"] < 2 or doc["samples_per_second"] <= 0:
            fail("no steps ran")
        if abs(doc["data_wait_seconds"] + doc["compute_seconds"] - doc["step_seconds"]) > 1e-9:
            fail("data wait + compute != step")
        if not 0 <= doc["data_stall_percent"] <= 100:
            fail("stall percent")
        if doc["warmup_steps"] < 1:
            fail("no warm-up before the timed steps")
        # The host's side of a step: its time, and the operators it dispatched (an eager step
        # of the MLP dispatches dozens; a CPU run never captures, and says why).
        if not 0 < doc["host_seconds_per_step"] <= doc["step_seconds"] * 1.5:
            fail(f"host time per step {doc['host_seconds_per_step']} against a {doc['step_seconds']} s step")
        if doc["host_ops_per_step"] < 20:
            fail(f"{doc['host_ops_per_step']} operators per eager step")
        if not doc["device"].startswith("cuda") and doc["cuda_graphs"] != "off (the device is not a CUDA GPU)":
            fail(f"cuda_graphs {doc['cuda_graphs']!r} on the CPU")
        # The GPU's own account of its wait exists on a GPU only, and is a share of the step there;
        # so do the launch counts (CUPTI's), where a captured step is a graph launch or two.
        on_gpu = doc["device"].startswith("cuda")
        for key in ("gpu_data_wait_seconds", "gpu_data_stall_percent", "kernel_launches_per_step", "graph_launches_per_step",
                    "gpu_kernels_per_step", "gpu_busy_percent"):
            if (doc[key] is None) == on_gpu:
                fail(f"{key} is {doc[key]} on {doc['device']}")
        if on_gpu and doc["cuda_graphs"] == "on" and not (doc["graph_launches_per_step"] >= 1 and doc["gpu_kernels_per_step"] > doc["kernel_launches_per_step"]):
            fail(f"captured steps: {doc['graph_launches_per_step']} graph launches, {doc['kernel_launches_per_step']} kernel launches, "
                 f"{doc['gpu_kernels_per_step']} kernels run")
        if on_gpu and not 0 <= doc["gpu_data_stall_percent"] <= 100:
            fail("GPU stall percent")
        if on_gpu and not 0 < doc["gpu_busy_percent"] <= 100:
            fail(f"GPU busy {doc['gpu_busy_percent']} %")
        # Without a GPU there is no utilisation: only the stall can decide, and it is small here.
        expected = "data-starved" if doc["data_stall_percent"] > 10 else "compute-bound"
        if doc["gpu_utilization_percent"] is None and doc["verdict"] != expected:
            fail(f"verdict {doc['verdict']} with a {doc['data_stall_percent']:.1f} % stall and no utilisation figure")
        print(f"ok: {doc['steps']} steps, {doc['data_stall_percent']:.1f} % data stall")
    elif mode == "step-trace-counts":
        import tempfile
        with tempfile.TemporaryDirectory() as folder:
            plain = json.loads(run(command + ["--json"]))
            traced = json.loads(run(command + ["--json", "--trace", os.path.join(folder, "trace.json")]))
        # The same 5 steps are counted either way; the loader's thread prefetching more or fewer
        # batches inside them moves the count by a few percent (counting the traced steps too made it +50 %).
        a, b = plain["host_ops_per_step"], traced["host_ops_per_step"]
        if abs(a - b) > 0.15 * a:
            fail(f"{a} operators per step without --trace, {b} with it")
        print(f"ok: {a:.0f} operators per step, {b:.0f} with --trace")
    else:
        fail("unknown mode " + mode)


if __name__ == "__main__":
    main()
