#!/usr/bin/env python3
"""Runs a gputrain command and checks one property of what it did (used by tests/cli).

  exit-code N -- CMD...       CMD exits with N
  json [ID...] -- CMD...      CMD's stdout is JSON that follows docs/verify.md's schema and has the
                              checks ID... (default: verify's system.cores, driver.present, ...)
  junit FILE -- CMD...        CMD writes JUnit XML to FILE with one testcase per check
  single-copy -- CMD...       CMD's verify JSON reports libraries.single_copy as pass
"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail  # noqa: E402

STATUSES = {"pass", "warn", "fail", "skip", "timeout"}


VERIFY_IDS = ("system.cores", "driver.present", "gpu.count", "libraries.single_copy")


def check_schema(doc, required_ids):
    expect = {"schema_version": int, "tool": str, "gputrain_version": str, "level": str, "allow_cpu": bool,
              "duration_s": (int, float), "exit_code": int, "summary": dict, "system": dict, "driver": dict,
              "gpus": list, "gpu_notes": list, "libraries": list, "libtorch": dict, "checks": list}
    for key, kind in expect.items():
        if not isinstance(doc.get(key), kind):
            fail(f"top-level key {key!r} missing or not {kind}")
    if doc["schema_version"] != 1:
        fail("schema_version is not 1")
    for key in ("status", "pass", "warn", "fail", "skip", "timeout"):
        if key not in doc["summary"]:
            fail(f"summary.{key} missing")
    ids = set()
    for check in doc["checks"]:
        for key in ("id", "area", "title", "status", "detail", "remedy", "duration_s", "figures"):
            if key not in check:
                fail(f"check lacks {key}: {check}")
        if check["status"] not in STATUSES:
            fail(f"unknown status {check['status']}")
        if check["status"] in ("warn", "fail", "timeout") and not check["remedy"]:
            fail(f"{check['id']} is {check['status']} without a remedy")
        if check["id"] in ids:
            fail(f"duplicate id {check['id']}")
        ids.add(check["id"])
        for figure in check["figures"]:
            if set(figure) != {"name", "value", "unit", "expected"}:
                fail(f"figure keys {sorted(figure)} in {check['id']}")
    for required in required_ids:
        if required not in ids:
            fail(f"check {required} missing")
    for library in doc["libraries"]:
        for key in ("name", "soname", "available", "version", "path", "error"):
            if key not in library:
                fail(f"library lacks {key}")


def main():
    args = sys.argv[1:]
    split = args.index("--")
    mode, params, command = args[0], args[1:split], args[split + 1:]
    if mode == "junit":  # no report of an earlier run may pass for this one's, and its folder is made anew
        if os.path.exists(params[0]):
            os.remove(params[0])
        folder = os.path.dirname(params[0])
        if folder and os.path.isdir(folder) and not os.listdir(folder):
            os.rmdir(folder)
    run = subprocess.run(command, capture_output=True, text=True)
    sys.stderr.write(run.stderr)
    if mode == "exit-code":
        if run.returncode != int(params[0]):
            fail(f"exit code {run.returncode}, expected {params[0]}\n{run.stdout}")
    elif mode == "json":
        doc = json.loads(run.stdout)
        check_schema(doc, params or VERIFY_IDS)
        if doc["exit_code"] != run.returncode:
            fail(f"JSON says exit {doc['exit_code']}, process exited {run.returncode}")
    elif mode == "single-copy":
        checks = {c["id"]: c for c in json.loads(run.stdout)["checks"]}
        if checks["libraries.single_copy"]["status"] != "pass":
            fail(checks["libraries.single_copy"]["detail"])
    elif mode == "junit":
        root = ET.parse(params[0]).getroot()
        cases = root.findall("./testsuite/testcase")
        if root.tag != "testsuites" or not cases:
            fail("no testcases")
        if int(root.get("tests")) != len(cases):
            fail("tests attribute does not match the testcases")
        failures = sum(1 for case in cases if case.find("failure") is not None)
        if int(root.get("failures")) != failures:
            fail("failures attribute does not match")
    else:
        fail(f"unknown mode {mode}")
    print("ok")


if __name__ == "__main__":
    main()
