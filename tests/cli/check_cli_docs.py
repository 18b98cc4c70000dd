#!/usr/bin/env python3
"""The generated man pages and shell completions (scripts/cli_docs.py) against the commands.

Usage: check_cli_docs.py SHARE_DIR BIN_DIR

- Every flag a command's --help lists is in its man page as man renders it (groff), with NAME,
  SYNOPSIS and OPTIONS sections; gputrain(1) names every command.
- bash completes commands, flags, a flag's choices and --set's config keys (with the '=').
- zsh parses its completion (`zsh -n`) and offers the same, where zsh is installed; said and left
  out otherwise.
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail  # noqa: E402


def rendered(page):
    result = subprocess.run(["groff", "-man", "-Tutf8", "-P", "-cbou", page], capture_output=True, text=True)
    if result.returncode != 0 or result.stderr.strip():
        fail(f"groff could not render {page}: {result.stderr}")
    return re.sub(r"\s+", " ", result.stdout.replace("\u2010", "-").replace("\u2212", "-"))


def completions(script, words):
    """What bash's COMPREPLY holds for the command line `words` (the last one being completed)."""
    line = " ".join("'" + w + "'" for w in words)
    code = (f"source {script}; COMP_WORDS=({line}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); _gputrain; "
            'printf "%s\\n" "${COMPREPLY[@]}"')
    result = subprocess.run(["bash", "-c", code], capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"bash completion failed for {words}: {result.stderr}")
    return result.stdout.split()


def check_zsh(zsh, script):
    """zsh parses the script, and its function offers what bash does (zsh's completion builtins
    replaced by ones that print what they were given)."""
    result = subprocess.run([zsh, "-n", script], capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"zsh cannot parse _gputrain: {result.stderr}")
    stubs = 'compadd() { print -r -- "compadd $*" }; _describe() { print -r -- "describe" }; _files() { print files }'
    cases = [("gputrain train --set optimizer.l", 4, "compadd -S = -- model.name"), ("gputrain verify --level x", 4, "compadd -- quick full"),
             ("gputrain train --ev", 3, "compadd -- -h --help --set"), ("gputrain tr", 2, "describe"), ("gputrain train conf", 3, "files")]
    for line, current, want in cases:
        prefix = line.split()[current - 1] if len(line.split()) >= current else ""
        code = f"{stubs}; source {script} >/dev/null; words=({line}); CURRENT={current}; PREFIX={prefix}; _gputrain"
        got = subprocess.run([zsh, "-f", "-c", code], capture_output=True, text=True).stdout.strip()
        if not got.startswith(want):
            fail(f"zsh offers {got[:80]!r} for {line!r}, expected {want!r}...")


def main():
    share, bin_dir = sys.argv[1], sys.argv[2]
    commands = ["profile", "quick-train", "train", "verify"]
    front = rendered(os.path.join(share, "man", "man1", "gputrain.1"))
    for command in commands:
        if f"gputrain-{command}(1)" not in front:
            fail(f"gputrain(1) does not name gputrain-{command}(1)")
        page = rendered(os.path.join(share, "man", "man1", f"gputrain-{command}.1"))
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS"):
            if section not in page:
                fail(f"gputrain-{command}(1) has no {section} section")
        help_text = subprocess.run([os.path.join(bin_dir, "gputrain-" + command), "--help"], capture_output=True, text=True).stdout
        for flag in sorted(set(re.findall(r"^  (?:-\w,)?(--[\w-]+)", help_text, re.M))):
            if flag not in page:
                fail(f"gputrain-{command}(1) does not mention {flag}, which its --help lists")
    script = os.path.join(share, "bash-completion", "completions", "gputrain")
    expected = [(["gputrain", "tr"], ["train"]),
                (["gputrain", "train", "--eva"], ["--evaluate"]),
                (["gputrain", "train", "--set", "optimizer.l"], ["optimizer.lr="]),
                (["gputrain", "train", "--set", "logging.alerts.grad"], ["logging.alerts.grad_norm="]),
                (["gputrain", "verify", "--level", ""], ["quick", "full"]),
                (["gputrain", "quick-train", "--precision", "bf"], ["bf16-mixed"]),
                (["gputrain", "help", "qu"], ["quick-train"])]
    for words, want in expected:
        got = completions(script, words)
        if got != want:
            fail(f"bash completes {' '.join(words)!r} to {got}, expected {want}")
    zsh = shutil.which("zsh")
    if zsh:
        check_zsh(zsh, os.path.join(share, "zsh", "site-functions", "_gputrain"))
    print(f"ok: {len(commands) + 1} man pages name every flag; bash completes {len(expected)} cases"
          + ("; zsh parses its script and offers the same" if zsh else "; no zsh here to check its script"))


if __name__ == "__main__":
    main()
