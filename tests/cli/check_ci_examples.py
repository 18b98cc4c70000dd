#!/usr/bin/env python3
"""docs/ci.md's CI files are valid and their gputrain commands exist with those flags.

Usage: check_ci_examples.py DOC -- GPUTRAIN

Each block marked `<!-- ci: KIND -->` is checked as its system reads it:
  github   YAML with jobs.<id>.steps, each step a `uses` or a `run`;
  gitlab   YAML whose job has a script list and artifacts.reports.junit;
  jenkins  a declarative pipeline with balanced braces, a junit step and sh steps;
  shell    bash -n parses it.
Then every `gputrain COMMAND --flag ...` in the block must be a command whose --help lists each
flag. Needs PyYAML (Debian's python3-yaml).
"""
import os
import re
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail  # noqa: E402


MARKER = re.compile(r"<!--\s*ci:\s*(\w+)\s*-->\s*\n```\w*\n(.*?)\n```", re.S)


def check_github(text):
    doc = yaml.safe_load(text)
    for job_id, job in doc["jobs"].items():
        if "runs-on" not in job or not job.get("steps"):
            fail(f"github job {job_id} lacks runs-on or steps")
        for step in job["steps"]:
            if ("uses" in step) == ("run" in step):
                fail(f"github step {step} needs exactly one of uses or run")
    return [s["run"] for job in doc["jobs"].values() for s in job["steps"] if "run" in s]


def check_gitlab(text):
    doc = yaml.safe_load(text)
    scripts = []
    for job_id, job in doc.items():
        if not isinstance(job.get("script"), list) or "junit" not in job.get("artifacts", {}).get("reports", {}):
            fail(f"gitlab job {job_id} needs a script list and artifacts.reports.junit")
        if job.get("allow_failure", {}).get("exit_codes") != [3]:
            fail(f"gitlab job {job_id}: allow_failure.exit_codes should be [3], verify's 'no GPU'")
        scripts += job["script"]
    return scripts


def check_jenkins(text):
    if text.count("{") != text.count("}") or text.count("(") != text.count(")"):
        fail("jenkins: unbalanced braces or parentheses")
    for needed in ("pipeline {", "agent", "stages {", "junit '", "sh "):
        if needed not in text:
            fail(f"jenkins: no '{needed}'")
    return re.findall(r"sh[ (](?:script: )?'([^']*)'", text)


def check_shell(text):
    result = subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True)
    if result.returncode != 0:
        fail("shell block does not parse: " + result.stderr)
    return [text]


def check_commands(scripts, gputrain, kind):
    found = 0
    for script in scripts:
        for match in re.finditer(r"\bgputrain ([a-z-]+)((?: +(?:--?[a-z-]+|[^\s\-'\"][^\s'\"]*))*)", script):
            command, rest = match.group(1), match.group(2)
            help_text = subprocess.run([gputrain, command, "--help"], capture_output=True, text=True)
            if help_text.returncode != 0:
                fail(f"{kind}: 'gputrain {command}' is not a command:\n{help_text.stderr}")
            for flag in re.findall(r"(?<!\S)(--[a-z-]+)", rest):
                if not re.search(re.escape(flag) + r"\b", help_text.stdout):
                    fail(f"{kind}: gputrain {command} has no {flag}")
            found += 1
    if found == 0:
        fail(f"{kind}: no gputrain command found")
    return found


def main():
    if len(sys.argv) != 4 or sys.argv[2] != "--":
        fail(__doc__)
    doc, gputrain = sys.argv[1], sys.argv[3]
    with open(doc, encoding="utf-8") as f:
        blocks = MARKER.findall(f.read())
    checkers = {"github": check_github, "gitlab": check_gitlab, "jenkins": check_jenkins, "shell": check_shell}
    kinds = [kind for kind, _ in blocks]
    if sorted(kinds) != sorted(checkers):
        fail(f"expected one block of each of {sorted(checkers)}, found {kinds}")
    for kind, text in blocks:
        commands = check_commands(checkers[kind](text), gputrain, kind)
        print(f"ok   {kind}: valid, {commands} gputrain commands with their flags")


if __name__ == "__main__":
    main()
