#!/usr/bin/env python3
"""The bad-input corpus (bad_input_cases.py) against the real commands (#52).

Usage: check_bad_input.py WORKDIR FIXTURES -- GPUTRAIN...
       check_bad_input.py --list     (print the cases)

Each case must exit with its documented code, never by a signal, and say `error: ...` then
`  fix: ...` on stderr, with no stack trace, no uncaught exception and nothing half-written
(a `.partial` file) or written at all when it is a usage error (the run folder, made before
the data opens so that an unwritable one stops the run first, holds only its lock and an empty
checkpoints/). Runs two cases
at a time; prints one line per case and every failure in full.
"""
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bad_input_cases import all_cases  # noqa: E402

NEVER = ["Segmentation fault", "frame #0", "Exception raised from", "terminate called", "Traceback", "what():",
         "type_error", "core dumped", "Aborted", "AddressSanitizer", "runtime error:"]


def expand(text, workdir, fixtures):
    return text.replace("{w}", workdir).replace("{f}", fixtures)


def run_case(item, root, fixtures, command):
    folder = os.path.join(root, item["name"])
    os.makedirs(folder)
    for name, content in item["files"].items():
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(expand(content, folder, fixtures).encode("utf-8", "surrogateescape"))
    given = {name: open(os.path.join(folder, name), "rb").read() for name in item["files"]}
    args = [expand(a, folder, fixtures) for a in item["args"]]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", GPUTRAIN_COLOR="never", NO_COLOR="1", **item["env"])
    try:
        result = subprocess.run(command + args, cwd=folder, capture_output=True, timeout=120, env=env)
    except subprocess.TimeoutExpired:
        return item, ["no answer within 120 s (a hang)"], ""
    err = result.stderr.decode("utf-8", "replace")
    problems = []
    if result.returncode < 0:
        problems.append(f"killed by signal {-result.returncode}")
    elif result.returncode != item["exit"]:
        problems.append(f"exit {result.returncode}, documented {item['exit']}")
    problems += [f"'{marker}' on stderr" for marker in NEVER if marker in err]
    lines = (err if item["style"] == "error" else result.stdout.decode("utf-8", "replace")).splitlines()
    head, fix = ("error: ", "  fix: ") if item["style"] == "error" else ("[FAIL]", "fix: ")
    errors = [n for n, line in enumerate(lines) if line.strip().startswith(head)]
    if not errors:
        problems.append(f"no '{head}' line")
    elif errors[0] + 1 >= len(lines) or not lines[errors[0] + 1].strip().startswith(fix.strip()):
        problems.append(f"the first '{head}' line is not followed by '{fix}'")
    if item["expect"] and item["expect"] not in err + result.stdout.decode("utf-8", "replace"):
        problems.append(f"stderr lacks '{item['expect']}'")
    for top, _, names in os.walk(folder):
        problems += [f"half-written file {os.path.join(top, n)}" for n in names if n.endswith(".partial")]
    for name, content in given.items():  # a usage error changes none of the files it was given
        path = os.path.join(folder, name)
        if item["exit"] == 2 and (not os.path.isfile(path) or open(path, "rb").read() != content):
            problems.append(f"a usage error changed or removed the input file {name}")
    run = os.path.join(folder, "run")
    if item["exit"] == 2 and os.path.isdir(run):
        written = [n for n in os.listdir(run) if n not in ("checkpoints", ".gputrain.lock")]
        if written or os.listdir(os.path.join(run, "checkpoints")):
            problems.append(f"a usage error wrote into the run folder: {sorted(written)}")
    return item, problems, err


def documented_codes():
    """The codes of the table under "## Exit codes" in docs/troubleshooting.md."""
    doc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "troubleshooting.md")
    with open(doc, encoding="utf-8") as f:
        section = f.read().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    return {int(m) for m in re.findall(r"^\| *(\d+) \|", section, re.M)}


def main():
    cases = all_cases()
    codes = documented_codes()
    undocumented = {c["exit"] for c in cases} - codes
    uncovered = {1, 2, 3} - {c["exit"] for c in cases}
    if undocumented or uncovered or not {0, 1, 2, 3, 130} <= codes:
        sys.exit(f"FAIL: docs' exit codes {sorted(codes)}; cases expect undocumented {sorted(undocumented)}, "
                 f"documented failures with no case {sorted(uncovered)}")
    if sys.argv[1:] == ["--list"]:
        for item in cases:
            print(f"{item['name']:40} exit {item['exit']}  gputrain {' '.join(a[:40] for a in item['args'])}")
        return
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.exit(__doc__)
    root, fixtures, command = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[4:]
    names = [item["name"] for item in cases]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        sys.exit(f"FAIL: cases named twice: {sorted(duplicates)}")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    failed = 0
    with ThreadPoolExecutor(max_workers=2) as pool:
        for item, problems, err in pool.map(lambda c: run_case(c, root, fixtures, command), cases):
            print(f"{'FAIL' if problems else 'ok  '} {item['name']} (exit {item['exit']})", flush=True)
            if problems:
                failed += 1
                print("     " + "; ".join(problems) + "\n     stderr: " + err[-1500:].replace("\n", "\n     "))
    print(f"{len(cases) - failed} of {len(cases)} cases behave as documented")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
