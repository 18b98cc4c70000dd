#!/usr/bin/env python3
"""A walkthrough doc (docs/getting-started.md) works as written: its marked blocks are run.

Markers are HTML comments just before a fenced block (invisible when the doc is rendered):
  <!-- run -->                           run the block with bash; it must exit 0
  <!-- run: exit 0|3 -->                 ... and exit with one of these codes
  <!-- run: exit 2; says did you mean --> ... and its output must contain the text after "says"
  <!-- file: people.yaml -->             write the block to that file
Blocks run in document order in one fresh folder (with the repository's configs/ linked into it),
with the built commands first on PATH. Unmarked `gputrain` lines are checked too: the command must
exist, and a `gputrain train` line must resolve its config (`--print-config`), so a renamed key or
config file in an example fails here.

Usage: run_doc_walkthrough.py DOC BIN_DIR SOURCE_DIR
       run_doc_walkthrough.py --check-only BIN_DIR SOURCE_DIR DOC...   (no blocks run: the other docs'
       examples, checked from the source folder)
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

MARKER = re.compile(r"<!--\s*(run|file)\s*(?::\s*(.*?))?\s*-->")


def blocks(doc):
    """(marker kind, marker argument, fence info, text, line) for each fenced block."""
    lines = open(doc, encoding="utf-8").read().split("\n")
    i, marker = 0, None
    while i < len(lines):
        line = lines[i]
        m = MARKER.fullmatch(line.strip())
        if m:
            marker = (m.group(1), m.group(2) or "", i + 1)
        elif line.startswith("```"):
            info, start, body = line[3:].strip(), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            kind, arg, _ = marker or (None, "", 0)
            yield kind, arg, info, "\n".join(body) + "\n", start
            marker = None
        elif line.strip():
            if marker:
                sys.exit("%s:%d: a marker must be followed by a fenced block" % (doc, marker[2]))
        i += 1


def expectation(arg, where):
    codes, says = {0}, None
    for part in filter(None, (p.strip() for p in arg.split(";"))):
        if part.startswith("exit "):
            codes = {int(c) for c in part[5:].split("|")}
        elif part.startswith("says "):
            says = part[5:]
        else:
            sys.exit("%s: unknown marker part %r (allowed: exit A|B, says TEXT)" % (where, part))
    return codes, says


def gputrain_lines(text):
    """The `gputrain ...` command lines of a shell block (continued lines joined), without comments."""
    for line in text.replace("\\\n", " ").split("\n"):
        words = shlex.split(line, comments=True)
        if words and words[0] == "gputrain" and len(words) > 1 and not words[1].startswith("-"):
            yield words


# What the variables in example commands stand for when they are checked (a node's place, ...).
EXAMPLE_VARIABLES = {"NODE_RANK": "1"}


def with_variables(words):
    """The words with $NAME and ${NAME} of EXAMPLE_VARIABLES put in, as the shell would."""
    put = lambda m: EXAMPLE_VARIABLES.get(m.group(1) or m.group(2), m.group(0))
    return [re.sub(r"\$(\w+)|\$\{(\w+)\}", put, w) for w in words]


def check_examples(words, where, bin_dir, cwd, env):
    """An example command that is not run: the command exists, and `train` resolves its config."""
    words = with_variables(words)
    command = words[1]
    if not os.access(os.path.join(bin_dir, "gputrain-" + command), os.X_OK):
        return ["%s: no command 'gputrain %s'" % (where, command)]
    if command == "train":
        # --print-config resolves the config alone: it excludes --evaluate (and so --json).
        words = [w for i, w in enumerate(words) if w != "--json" and w != "--evaluate" and not w.startswith("--evaluate=")
                 and (i == 0 or words[i - 1] != "--evaluate")]
        result = subprocess.run(words + ["--print-config"], cwd=cwd, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            return ["%s: %s --print-config: exit %d\n%s" % (where, " ".join(words), result.returncode, result.stderr)]
    return []


def check_only(bin_dir, source_dir, docs, env):
    failures, checked = [], 0
    for doc in docs:
        for _, _, info, text, line in blocks(doc):
            if info not in ("sh", "bash"):
                continue
            for words in gputrain_lines(text):
                checked += 1
                failures += check_examples(words, "%s:%d" % (doc, line), bin_dir, source_dir, env)
    return failures, checked


def environment(bin_dir):
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    env["CUDA_VISIBLE_DEVICES"] = ""  # the walkthrough's timings assume the CPU, also on a GPU box
    return env


def report(failures, summary):
    for f in failures:
        print("FAIL " + f)
    print("%s, %d failures" % (summary, len(failures)))
    return 1 if failures else 0


def main():
    if sys.argv[1] == "--check-only":
        bin_dir, source_dir = (os.path.abspath(a) for a in sys.argv[2:4])
        failures, checked = check_only(bin_dir, source_dir, sys.argv[4:], environment(bin_dir))
        if checked == 0:
            failures.append("no gputrain commands found in " + " ".join(sys.argv[4:]))
        return report(failures, "%d example commands checked" % checked)
    doc, bin_dir, source_dir = (os.path.abspath(a) for a in sys.argv[1:4])
    env = environment(bin_dir)
    failures, ran = [], 0
    with tempfile.TemporaryDirectory(prefix="gputrain-walkthrough-") as work:
        os.symlink(os.path.join(source_dir, "configs"), os.path.join(work, "configs"))
        for kind, arg, info, text, line in blocks(doc):
            where = "%s:%d" % (doc, line)
            if kind == "file":
                with open(os.path.join(work, arg.strip()), "w", encoding="utf-8") as f:
                    f.write(text)
                continue
            if info != "sh":
                continue
            if kind == "run":
                codes, says = expectation(arg, where)
                result = subprocess.run(["bash", "-c", text], cwd=work, env=env, capture_output=True, text=True, timeout=600)
                output = result.stdout + result.stderr
                ran += 1
                print("%s: exit %d\n%s" % (where, result.returncode, "\n".join(output.strip().split("\n")[-4:])))
                if result.returncode not in codes:
                    failures.append("%s: exit %d, expected %s:\n%s" % (where, result.returncode, sorted(codes), output[-3000:]))
                elif says and says not in output:
                    failures.append("%s: the output does not say %r:\n%s" % (where, says, output[-3000:]))
                continue
            for words in gputrain_lines(text):
                failures += check_examples(words, where, bin_dir, work, env)
    if ran == 0:
        failures.append("%s: no <!-- run --> blocks found" % doc)
    return report(failures, "%d blocks run" % ran)


if __name__ == "__main__":
    sys.exit(main())
