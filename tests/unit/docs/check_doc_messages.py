#!/usr/bin/env python3
"""The messages docs/troubleshooting.md quotes are ones gputrain really prints.

Every `code` fragment in a sentence that starts with "gputrain says:" must occur verbatim in the
sources under src/ or tools/. A message that is
reworded in code fails this test until the doc follows.

Usage: check_doc_messages.py SOURCE_DIR
"""
import os
import re
import sys


def sources(root):
    text = []
    for folder in ("src", "tools"):
        for base, _, files in os.walk(os.path.join(root, folder)):
            for name in files:
                if name.endswith((".cpp", ".hpp", ".in")):
                    with open(os.path.join(base, name), encoding="utf-8") as f:
                        text.append(f.read())
    # Long messages are split over C++ string literals: join adjacent literals, so a fragment
    # that spans two of them is found.
    return re.sub(r'"\s*\n\s*"', "", "\n".join(text))


def quoted_fragments(doc):
    """The `code` fragments of each sentence that starts with "gputrain says:"."""
    fragments = []
    for paragraph in doc.split("\n\n"):
        for said in paragraph.split("gputrain says:")[1:]:
            said = said.replace("\n", " ")
            # The sentence ends at the first full stop outside backticks.
            inside, end = False, len(said)
            for i, ch in enumerate(said):
                if ch == "`":
                    inside = not inside
                elif ch == "." and not inside and (i + 1 == len(said) or said[i + 1] == " "):
                    end = i
                    break
            fragments += re.findall(r"`([^`]+)`", said[:end])
    return fragments


def main():
    root = sys.argv[1]
    with open(os.path.join(root, "docs", "troubleshooting.md"), encoding="utf-8") as f:
        doc = f.read()
    code = sources(root)
    missing = []
    messages = quoted_fragments(doc)
    for fragment in messages:
        if fragment not in code:
            missing.append(fragment)
    if len(messages) < 10:
        print("FAIL: only %d messages found after 'gputrain says:' (the parser broke?)" % len(messages))
        sys.exit(1)
    if missing:
        print("FAIL: docs/troubleshooting.md quotes text the sources do not print:")
        for m in missing:
            print("  " + repr(m))
        sys.exit(1)
    print("ok: the %d quoted messages are in the sources" % len(messages))


if __name__ == "__main__":
    main()
