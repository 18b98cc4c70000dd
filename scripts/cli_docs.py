#!/usr/bin/env python3
"""Man pages and shell completions for gputrain, generated from the commands' own --help.

The help text is the one definition of each command's flags (CLI11 writes it from the code), so
the pages and completions cannot drift from the commands: the build runs this after linking them.

Usage: cli_docs.py BIN_DIR OUT_DIR VERSION
Writes under OUT_DIR, in the layout `cmake --install` copies to <prefix>/share:
  man/man1/gputrain.1, man/man1/gputrain-<command>.1
  bash-completion/completions/gputrain
  zsh/site-functions/_gputrain
"""
import os
import re
import subprocess
import sys

OPTION = re.compile(r"^  (-\w,)?(--[\w-]+)(.*)$")
# CLI11's "VALUE:check ..." after a flag: the placeholder, its check (choices, a range), repeatable.
SPEC = re.compile(r"^(?P<value>[A-Z][\w.|=-]*)(?::(?P<check>\{[^}]*\}|from \S+ to \S+|\S+ or more))?(?P<more> \.\.\.)?(?:\s+(?P<desc>.*))?$")


# Flags, keys and file names break badly at a hyphen: no hyphenation, ragged right.
NO_HYPHENS = ".nh\n.ad l"


def run(args):
    result = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        sys.exit(f"cli_docs.py: {' '.join(args)} exited {result.returncode}:\n{result.stderr}")
    return result.stdout + result.stderr


def commands_of(front_help):
    """{command: one-line description} from `gputrain --help`'s commands: list."""
    commands, inside = {}, False
    for line in front_help.splitlines():
        if line.startswith("commands:"):
            inside = True
        elif inside and re.match(r"^  \S", line):
            name, _, text = line.strip().partition(" ")
            commands[name] = text.strip()
        elif inside and not line.strip():
            break
    return commands


def parse_help(text):
    """A command's help: its description (before "Usage:"), usage line, options and the text after.

    Each option: (names, value placeholder or None, choices, description)."""
    before, _, after = text.partition("Usage: ")
    usage, _, rest = after.partition("\n")
    options, other = [], []
    for line in rest.splitlines():
        m = OPTION.match(line)
        if m:
            short, name, tail = m.group(1), m.group(2), m.group(3)
            tail = re.sub(r" \(Env:\w+\)", "", tail)
            tail = re.sub(r" (Needs|Excludes): --[\w-]+", "", tail)
            spec = None if tail.startswith("  ") else SPEC.match(tail.strip())
            value, desc, choices, notes = None, tail.strip(), [], ""
            if spec:
                value, check, desc = spec.group("value"), spec.group("check") or "", (spec.group("desc") or "").strip()
                choices = check.strip("{}").split(",") if check.startswith("{") else []
                notes = (f" ({check})" if check and not choices else "") + (" (repeatable)" if spec.group("more") else "")
            names = ([short.rstrip(",")] if short else []) + [name]
            options.append([names, value, choices, desc, notes])
        elif options and re.match(r"^ {20,}\S", line):
            options[-1][3] = (options[-1][3] + " " + line.strip()).strip()
        elif line.strip() and not line.startswith("  config ") and not line.endswith(":"):  # not a group's heading
            other.append(line)
    options = [[names, value, choices, (desc + notes).strip()] for names, value, choices, desc, notes in options]
    return before.strip("\n"), usage.strip(), options, "\n".join(other).strip("\n")


def roff(text):
    """Text safe in a man page: backslashes doubled, no line starting with a dot or quote."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + l if l.startswith((".", "'")) else l) for l in text.splitlines())


def paragraphs(text):
    """Prose as filled paragraphs (a blank line ends one); indented lines (examples) as they are."""
    blocks, block, indented = [], [], False
    for line in text.splitlines() + [""]:
        if not line.strip() or (block and line.startswith("  ") != indented):
            if block:
                blocks.append((indented, block))
            block = [line] if line.strip() else []
            indented = line.startswith("  ")
            continue
        if not block:
            indented = line.startswith("  ")
        block.append(line)
    page = []
    for indented, lines in blocks:
        page.append(".PP\n.nf\n" + roff("\n".join(lines)) + "\n.fi" if indented else ".PP\n" + roff("\n".join(l.strip() for l in lines)))
    return "\n".join(page)


def man_page(name, summary, version, help_text):
    description, usage, options, other = parse_help(help_text)
    lines = [f'.TH {name.upper()} 1 "" "gputrain {version}" "User Commands"', NO_HYPHENS, ".SH NAME", roff(f"{name} - {summary}"),
             ".SH SYNOPSIS", roff(usage), ".SH DESCRIPTION", paragraphs(description)]
    if options:
        lines.append(".SH OPTIONS")
        for names, value, _, desc in options:
            lines += [".TP", "\\fB" + roff(", ".join(names)) + "\\fR" + (" \\fI" + roff(value) + "\\fR" if value else ""), roff(desc)]
    if other:
        lines += [".SH NOTES", paragraphs(other)]
    lines += [".SH SEE ALSO", "\\fBgputrain\\fR(1); the docs/ folder of gputrain's source: configuration.md has every config key."]
    return "\n".join(lines) + "\n"


def front_page(version, front_help, commands):
    lines = [f'.TH GPUTRAIN 1 "" "gputrain {version}" "User Commands"', NO_HYPHENS, ".SH NAME",
             roff("gputrain - set up, check and train on NVIDIA GPUs with LibTorch"), ".SH SYNOPSIS",
             roff("gputrain <command> [options]") + "\n.br\n" + roff("gputrain --version"), ".SH COMMANDS"]
    for command, text in commands.items():
        lines += [".TP", f"\\fB{roff(command)}\\fR", roff(text) + f" (\\fBgputrain\\-{roff(command)}\\fR(1))"]
    exit_codes = " ".join(front_help[front_help.find("exit codes:") + len("exit codes:"):].split())
    lines += [".SH EXIT STATUS", roff(exit_codes)]
    return "\n".join(lines) + "\n"


def config_keys(print_config):
    """Every dotted key of `gputrain train --print-config`'s YAML (block maps, scalar leaves)."""
    keys, stack = [], []
    for line in print_config.splitlines():
        m = re.match(r"^( *)([\w-]+):(.*)$", line)
        if not m:
            continue
        depth = len(m.group(1)) // 2
        stack = stack[:depth] + [m.group(2)]
        if m.group(3).strip():
            keys.append(".".join(stack))
    return keys


def bash_completion(commands, specs, keys):
    cases = []
    for command, options in specs.items():
        flags = " ".join(n for names, _, _, _ in options for n in names)
        valued = " ".join(n for names, value, _, _ in options if value for n in names)
        choices = "".join(f"\n        {'|'.join(names)}) COMPREPLY=($(compgen -W \"{' '.join(c)}\" -- \"$cur\")); return ;;"
                          for names, _, c, _ in options if c)
        cases.append(f"    {command})\n      opts=\"{flags}\"; valued=\"{valued}\"\n      case $prev in{choices}\n      esac ;;")
    return f"""# bash completion for gputrain, generated by scripts/cli_docs.py from the commands' --help.
# Commands, their flags and the choices some take; --set completes every config key.
_gputrain_keys="{' '.join(keys)}"
_gputrain() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} opts= valued=
  if (( COMP_CWORD == 1 )); then
    COMPREPLY=($(compgen -W "{' '.join(commands)} help --help --version" -- "$cur")); return
  fi
  case ${{COMP_WORDS[1]}} in
    help) COMPREPLY=($(compgen -W "{' '.join(commands)}" -- "$cur")); return ;;
{chr(10).join(cases)}
  esac
  if [[ $prev == --set ]]; then
    compopt -o nospace 2>/dev/null
    COMPREPLY=($(compgen -S = -W "$_gputrain_keys" -- "$cur")); return
  fi
  if [[ " $valued " == *" $prev "* ]]; then COMPREPLY=($(compgen -f -- "$cur")); return; fi
  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "$opts" -- "$cur")); return; fi
  COMPREPLY=($(compgen -f -- "$cur"))  # config files, and the paths options take
}}
complete -o filenames -F _gputrain gputrain
"""


def zsh_completion(commands, specs, keys):
    described = " ".join("'" + c + ":" + t.replace("'", "'\\''").replace(":", "\\:") + "'" for c, t in commands.items())
    cases = []
    for command, options in specs.items():
        flags = " ".join(n for names, _, _, _ in options for n in names)
        choices = "".join(f"\n        {'|'.join(names)}) compadd -- {' '.join(c)}; return ;;" for names, _, c, _ in options if c)
        cases.append(f"    {command})\n      opts=({flags})\n      case $words[CURRENT-1] in{choices}\n      esac ;;")
    return f"""#compdef gputrain
# zsh completion for gputrain, generated by scripts/cli_docs.py from the commands' --help.
_gputrain() {{
  local -a commands opts keys
  commands=({described})
  keys=({' '.join(keys)})
  if (( CURRENT == 2 )); then _describe -t commands 'gputrain command' commands; return; fi
  case $words[2] in
    help) _describe -t commands 'gputrain command' commands; return ;;
{chr(10).join(cases)}
  esac
  if [[ $words[CURRENT-1] == --set ]]; then compadd -S = -- $keys; return; fi
  if [[ $PREFIX == -* ]]; then compadd -- $opts; return; fi
  _files
}}
_gputrain "$@"
"""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    bin_dir, out, version = sys.argv[1:]
    front_help = run([os.path.join(bin_dir, "gputrain"), "--help"])
    commands = commands_of(front_help)
    if not commands:
        sys.exit("cli_docs.py: `gputrain --help` lists no commands")
    specs = {}
    for command, summary in commands.items():
        text = run([os.path.join(bin_dir, "gputrain-" + command), "--help"])
        specs[command] = parse_help(text)[2]
        write(os.path.join(out, "man", "man1", f"gputrain-{command}.1"), man_page(f"gputrain-{command}", summary, version, text))
    write(os.path.join(out, "man", "man1", "gputrain.1"), front_page(version, front_help, commands))
    keys = config_keys(run([os.path.join(bin_dir, "gputrain-train"), "--print-config"])) if "train" in commands else []
    write(os.path.join(out, "bash-completion", "completions", "gputrain"), bash_completion(commands, specs, keys))
    write(os.path.join(out, "zsh", "site-functions", "_gputrain"), zsh_completion(commands, specs, keys))


if __name__ == "__main__":
    main()
