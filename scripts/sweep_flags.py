"""Random command lines for the `flags` mode of scripts/config_sweep.py: each command's options as
its --help lists them, given values of every kind (or none, or twice), and the environment the
commands read (the launchers' rank variables, the options' twins, CUDA_VISIBLE_DEVICES) set to
values a user or a scheduler gets wrong."""
import os
import re
import subprocess

COMMANDS = ("verify", "quick-train", "profile", "train")

# Values for an option that takes one: of every kind, and the numbers and paths that break parsers.
# No mid-sized counts (a run of 10^6 iterations is slow, not wrong): only the small and the absurd.
HOSTILE = ("", "-1", "0", "1", "2", "abc", "1e309", "nan", "-0", "99999999999999999999", "1.5", "0x10", " 3", "3 ",
           "2,4", "--json", "=", "\u00e9t\u00e9", "x" * 300, "/nonexistent/folder/file", "/dev/full", "/", ".", "/dev/null")
PATHS = ("{folder}/out/report.xml", "{folder}", "/dev/full", "/nonexistent/x.xml", "/proc/x.xml", "{folder}/a b/\u00e9.svg",
         "{folder}/plot.png", "{folder}/trace.json", "{folder}/t.json.gz")
PATH_OPTIONS = ("--junit", "--plot", "--trace", "--evaluate", "--path")

# What the commands read from the environment, with values of every kind.
ENVIRONMENT = {
    "GPUTRAIN_LOG_LEVEL": ("debug", "loud", "", "TRACE", "off"),
    "GPUTRAIN_ALLOW_CPU": ("1", "0", "yes", "maybe", ""),
    "GPUTRAIN_VERIFY_LEVEL": ("full", "quick", "fast", ""),
    "GPUTRAIN_MAX_MEMORY": ("1GiB", "0", "-1", "lots", "1e309"),
    "GPUTRAIN_DEVICE": ("cpu", "cuda", "cuda:7", "tpu", ""),
    "NO_COLOR": ("1", ""),
    "FORCE_COLOR": ("1", "0", "x"),
    "TERM": ("dumb", "xterm-256color", ""),
    "CUDA_VISIBLE_DEVICES": ("", "-1", "0", "0,0", "abc", "GPU-", "99"),
    "RANK": ("0", "1", "5", "-1", "x"),
    "WORLD_SIZE": ("1", "2", "0", "-3", "x"),
    "LOCAL_RANK": ("0", "1", "3", "x"),
    "LOCAL_WORLD_SIZE": ("1", "2", "0"),
    "MASTER_ADDR": ("127.0.0.1", "", "no-such-host.invalid", "::1"),
    "MASTER_PORT": ("0", "70000", "x", "29500", "-1"),
    "OMPI_COMM_WORLD_SIZE": ("1", "2", "0", "x"),
    "OMPI_COMM_WORLD_RANK": ("0", "1", "x"),
    "SLURM_PROCID": ("0", "1", "x"),
    "SLURM_NTASKS_PER_NODE": ("1", "2", "x", "2(x3)"),
    "SLURM_NODELIST": ("node[1-2]", "node[", "", "a,b"),
    "OMP_NUM_THREADS": ("1", "0", "-2", "x", "100000"),
}


def help_options(gputrain, command):
    """[(flag, takes_value, choices)] from `gputrain COMMAND --help` (CLI11's layout: `--level
    TEXT:{quick,full}`, `--json`, `--workers UINT ...`)."""
    text = subprocess.run([gputrain, command, "--help"], capture_output=True, text=True, timeout=60).stdout
    options = []
    for line in text[text.find("\nOptions:"):].splitlines():
        found = re.match(r"\s+(?:-\w,\s*)?(--[\w-]+)(?:\s+([A-Z][A-Z0-9_]*)(?::\{([^}]*)\}|:\w+)?(?![\w:]))?", line)
        if not found or found.group(1) in ("--help", "--help-all", "--version"): continue
        choices = tuple(found.group(3).split(",")) if found.group(3) else ()
        options.append((found.group(1), bool(found.group(2)), choices))
    return options


def option_words(p, flag, takes_value, choices, folder):
    """One option as the user might type it: right, wrong, without its value, with '='."""
    if not takes_value:
        return [flag] if p.maybe(0.85) else [flag + "=" + p.one("1", "true", "no", "x")]
    if flag in PATH_OPTIONS and p.maybe(0.6):
        value = p.one(*PATHS).format(folder=folder)
    elif choices and p.maybe(0.6):
        value = p.one(*choices)
    else:
        value = p.one(*HOSTILE)
    if p.maybe(0.1): return [flag]  # the value left off
    return [flag + "=" + value] if p.maybe(0.3) else [flag, value]


def command_line(p, gputrain, command, options, config_path, folder):
    """A random command line for `command` (the config first for train and profile)."""
    words = [gputrain, command]
    if command in ("train", "profile") and p.maybe(0.85): words.append(config_path)
    for _ in range(p.one(1, 1, 2, 3, 4)):
        flag, takes_value, choices = p.one(*options)
        words += option_words(p, flag, takes_value, choices, folder)
    if p.maybe(0.08): words.append(p.one("extra", "--", "-x", "--nonsense", config_path))
    if command in ("verify", "quick-train") and "--allow-cpu" not in words and p.maybe(0.7): words.append("--allow-cpu")
    return words


def environment(p):
    """The process environment with zero to three of ENVIRONMENT's variables set (and what was set)."""
    env = {k: v for k, v in os.environ.items() if k not in ENVIRONMENT}
    chosen = {}
    for _ in range(p.one(0, 0, 1, 1, 2, 3)):
        name = p.one(*sorted(ENVIRONMENT))
        chosen[name] = p.one(*ENVIRONMENT[name])
    env.update(chosen)
    return env, chosen
