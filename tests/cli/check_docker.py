#!/usr/bin/env python3
"""docker/Dockerfile cannot be built here (no Docker daemon, no NVIDIA images), so what it relies on
is checked without it:

  1. its build stage installs every -dev package scripts/bootstrap.sh installs to build the code
     (a dependency added to one and not the other fails the image's build, not this project's);
  2. docker/runtime-packages.sh, which the build stage runs on the installed binaries, names the
     packages of the libraries they load (yaml-cpp, libzip, libjpeg, libpng, spdlog), none of
     LibTorch's or the CUDA wheels', and exits 0.

Usage: check_docker.py SOURCE_DIR BINARY_OR_LIBRARY...
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checker import fail  # noqa: E402


# Debian's name for a package where Ubuntu's differs, with the name both know.
SAME_PACKAGE = {"libjpeg62-turbo-dev": "libjpeg-dev"}


def bootstrap_dev_packages(source):
    text = open(f"{source}/scripts/bootstrap.sh").read()
    found = re.search(r"^packages=\((.*?)\)", text, re.S | re.M)
    if not found:
        fail("scripts/bootstrap.sh has no packages=( ... ) list")
    return [SAME_PACKAGE.get(p, p) for p in found.group(1).split() if p.endswith("-dev")]


def dockerfile_build_packages(source):
    text = open(f"{source}/docker/Dockerfile").read()
    build_stage = text.split(" AS runtime")[0]
    found = re.search(r"apt-get install -y --no-install-recommends(.*?)&&", build_stage, re.S)
    if not found:
        fail("docker/Dockerfile's build stage has no apt-get install")
    return found.group(1).replace("\\", " ").split()


def main():
    if len(sys.argv) < 3:
        fail(__doc__)
    source, binaries = sys.argv[1], sys.argv[2:]
    needed, installed = bootstrap_dev_packages(source), dockerfile_build_packages(source)
    missing = [p for p in needed if p not in installed]
    if missing:
        fail(f"docker/Dockerfile's build stage lacks {missing}, which scripts/bootstrap.sh installs to build")
    print(f"the Dockerfile's build stage installs all {len(needed)} -dev packages bootstrap.sh does")

    run = subprocess.run([f"{source}/docker/runtime-packages.sh"] + binaries, capture_output=True, text=True)
    if run.returncode != 0:
        fail(f"runtime-packages.sh exited {run.returncode}:\n{run.stderr}")
    packages = run.stdout.split()
    for library in ("libyaml-cpp", "libzip", "libjpeg", "libpng", "libspdlog"):
        if not any(p.startswith(library) for p in packages):
            fail(f"no package for {library} among {packages}")
    wheel = [p for p in packages if "nvidia" in p or "torch" in p or "cuda" in p]
    if wheel:
        fail(f"LibTorch's and the CUDA wheels' libraries travel as files, yet packages were named for them: {wheel}")
    if len(packages) != len(set(packages)) or any(":" in p or "/" in p for p in packages):
        fail(f"one package name a line, each once: {run.stdout}")
    print(f"runtime packages: {' '.join(packages)}")


if __name__ == "__main__":
    main()
