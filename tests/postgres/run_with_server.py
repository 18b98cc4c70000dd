#!/usr/bin/env python3
"""Runs a command against the test server of tests/postgres/pg_server.py: first
docs/examples/postgres_sample.sh (the table configs/postgres.yaml reads), then the command with
`--set data.dsn=<the server>` appended. Exits 77 (skipped) when the machine has no server.

  run_with_server.py SERVER_DIR -- COMMAND...
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    folder, command = sys.argv[1], sys.argv[3:]
    absent = os.path.join(folder, "absent")
    if os.path.exists(absent):
        print("skipped: " + open(absent).read())
        sys.exit(77)
    env = dict(line.strip().split("=", 1) for line in open(os.path.join(folder, "server.env")) if "=" in line)
    dsn = "host=%s port=%s user=%s dbname=postgres" % (env["socket_dir"], env["port"], env["user"])
    path = dict(os.environ, PATH=env["bin_dir"] + os.pathsep + os.environ.get("PATH", ""))
    subprocess.run([os.path.join(ROOT, "docs", "examples", "postgres_sample.sh"), dsn], check=True, env=path)
    sys.exit(subprocess.run(command + ["--set", "data.dsn=" + dsn]).returncode)


if __name__ == "__main__":
    main()
