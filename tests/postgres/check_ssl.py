#!/usr/bin/env python3
"""A PostgreSQL server that takes SSL, reached with data.dsn's SSL settings wrong: each failure of
libpq's certificate checks is named as the SSL connection failing (exit 2) with the setting to
change, not as a server to start or a login to check, which is what a user saw before.

Usage: check_ssl.py WORKDIR -- GPUTRAIN...

Starts a server of its own with SSL on (tests/postgres/pg_server.py, a self-signed certificate
for 'localhost'; the shared server has no SSL, which the sslmode=require test needs), then runs
`gputrain train` over TCP with: sslmode=verify-ca and the certificate as sslrootcert (trains,
exit 0); verify-full with no root certificate; verify-full by address, not by the certificate's
name; a sslrootcert that is no PEM file; a sslcert without its key. Exits 77 (skipped) without the
server binaries or the openssl command.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pg_server  # noqa: E402
from pg_server import fail  # noqa: E402

QUERY = "SELECT g::float4 AS x, (g % 2)::int4 AS label FROM generate_series(1, 256) g"


def train(command, workdir, name, dsn, home):
    args = command + ["--set", "data.source=postgres", "--set", "data.dsn=" + dsn, "--set", "data.query=" + QUERY,
                      "--set", "data.labels=label", "--set", "device=cpu", "--set", "train.epochs=1",
                      "--set", "logging.dir=" + os.path.join(workdir, name), "--set", "checkpoint.resume=never"]
    # HOME without ~/.postgresql: libpq's default root certificate is not there.
    env = {**os.environ, "HOME": home, "PGPASSWORD": pg_server.PASSWORD}
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)


def main():
    workdir, command = pg_server.workdir_and_command(__doc__)
    if not shutil.which("openssl"):
        print("skipped: no openssl command to make the server's certificate (Debian: apt-get install openssl)")
        sys.exit(77)
    server = os.path.join(workdir, "server")
    env = pg_server.start_or_skip(server, ssl=True)
    try:
        home = os.path.join(workdir, "home")
        os.makedirs(home, exist_ok=True)
        root = os.path.join(workdir, "root.crt")
        shutil.copy(env["ssl_cert"], root)
        not_pem = os.path.join(workdir, "not-a-certificate.txt")
        with open(not_pem, "w") as f:
            f.write("model: {name: mlp}\n")
        base = "host=127.0.0.1 port=%s user=%s dbname=postgres" % (env["port"], env["password_user"])
        good = train(command, workdir, "good", base + " sslmode=verify-ca sslrootcert=" + root, home)
        if good.returncode != 0:
            fail("verify-ca with the server's certificate as sslrootcert exited %d:\n%s" % (good.returncode, good.stderr))
        cases = [
            ("no_root", " sslmode=verify-full", "sslrootcert=/path/to/ca.crt"),
            ("by_address", " sslmode=verify-full sslrootcert=" + root, "set sslmode=verify-ca"),
            ("not_pem", " sslmode=verify-full sslrootcert=" + not_pem, "must name a PEM file of CA certificates"),
            ("no_key", " sslmode=require sslcert=" + root + " sslkey=" + os.path.join(workdir, "absent.key"), "as data.dsn's sslcert and sslkey"),
        ]
        for name, settings, fix in cases:
            result = train(command, workdir, name, base + settings, home)
            said = result.stderr
            if result.returncode != 2 or "answered, but the SSL connection data.dsn asks for failed" not in said or fix not in said:
                fail("%s: exit %d, expected 2 naming the SSL connection with the fix '%s':\n%s" % (name, result.returncode, fix, said))
            if "start the server" in said or "refused the login" in said:
                fail("%s: the wrong fix is still offered:\n%s" % (name, said))
            print("ok: %s: %s" % (name, said.strip().splitlines()[-1]))
    finally:
        pg_server.stop(server)


if __name__ == "__main__":
    main()
