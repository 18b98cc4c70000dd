#!/usr/bin/env python3
"""The size rules of docs/architecture.md: no source file over 500 lines, no function over 80.

Counts every .cpp/.hpp/.cu under src/, include/, tools/, tests/ and bench/ (a test is a function
too), and the lines of every Python, shell and CMake file under those and scripts/. A function is a brace block opened at
namespace or class level after a ')' (its parameter list); its length runs from the line its
signature starts on to its closing brace. Prints each file or function over its limit, with the
fix, and exits 1 when there is one.

Usage: check_code_sizes.py [REPO_ROOT]
"""
import os
import re
import sys

from source_rules import finish, repo_root

MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
FOLDERS = ("src", "include", "tools", "tests", "bench", "scripts")
CPP = (".cpp", ".hpp", ".cu")
OTHER_CODE = (".py", ".sh", ".cmake", "CMakeLists.txt")


def code_only(text):
    """The text with comments, strings and character literals blanked, line breaks kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i)
            delim = text[i + 2:open_paren]
            j = text.find(")" + delim + '"', open_paren)
            j = n if j < 0 else j + len(delim) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def long_functions(text):
    """(first line, length) of each function body longer than the limit."""
    code = code_only(text)
    scopes, found = [], []  # (kind, start line)
    head_start = 0  # where the text since the last ; { or } begins
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c in ";":
            head_start = i + 1
        elif c == "{":
            head = code[head_start:i]
            in_function = any(kind == "function" for kind, _ in scopes)
            if in_function:
                kind = "block"
            elif re.search(r"\b(namespace|extern)\b", head):
                kind = "namespace"
            elif re.search(r"\b(class|struct|union|enum)\b", head) and "(" not in head.split("class")[0].split("struct")[0]:
                kind = "class"
            elif ")" in head:
                kind = "function"
            else:
                kind = "block"
            stripped = head.lstrip()
            first = line - head[len(head) - len(stripped):].count("\n") if stripped else line
            first = line - stripped.count("\n") if stripped else line
            scopes.append((kind, first))
            head_start = i + 1
        elif c == "}":
            if scopes:
                kind, first = scopes.pop()
                if kind == "function" and line - first + 1 > MAX_FUNCTION_LINES:
                    found.append((first, line - first + 1))
            head_start = i + 1
    return found


def main():
    root = repo_root()
    problems = []
    for folder in FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith(CPP + OTHER_CODE):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                lines = text.count("\n")
                if lines > MAX_FILE_LINES:
                    problems.append(f"{rel}: {lines} lines (at most {MAX_FILE_LINES}): split it by concern")
                for first, length in long_functions(text) if name.endswith(CPP) else ():
                    problems.append(f"{rel}:{first}: a function of {length} lines (at most {MAX_FUNCTION_LINES}): split it into named steps")
    return finish(problems)


if __name__ == "__main__":
    sys.exit(main())
