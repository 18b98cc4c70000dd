#!/usr/bin/env python3
"""A PostgreSQL server that answers in German (lc_messages = de_DE.UTF-8), as many in Europe do:
each refusal and cancel is named as it is on an English one. Before, gputrain told them apart by
the server's English words: a wrong password or database said "cannot reach PostgreSQL ... start
the server", a statement_timeout said "cancelled at another session's request". Now by SQLSTATE
(a connection's from libpq's verbose errors), and a timeout from a cancel by how long it ran.

Usage: check_german_server.py WORKDIR -- GPUTRAIN...

Starts a server of its own (tests/postgres/pg_server.py, german=True). Exits 77 (skipped) without
the server binaries, its German messages, or localedef's locale sources (Debian: locales).
"""
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pg_server  # noqa: E402
from pg_server import fail  # noqa: E402


def main():
    workdir, command = pg_server.workdir_and_command(__doc__)
    server = os.path.join(workdir, "server")
    env = pg_server.start_or_skip(server, german=True)
    home, port = env["socket_dir"], env["port"]
    psql = [os.path.join(env["bin_dir"], "psql"), "-h", home, "-p", port, "-U", "gputrain", "-d", "postgres", "-tA", "-v", "ON_ERROR_STOP=1"]

    def sql(statement):
        return subprocess.run(psql + ["-c", statement], capture_output=True, text=True, check=True).stdout.strip()

    try:
        sql("CREATE TABLE rows_ AS SELECT g::float4 AS x, (g % 2) AS label FROM generate_series(1, 2000) g")
        sql("GRANT SELECT ON rows_ TO trainer")
        sql("CREATE ROLE crowded LOGIN CONNECTION LIMIT 0")
        if "Division durch Null" not in subprocess.run(psql + ["-c", "SELECT 1/0"], capture_output=True, text=True).stderr:
            fail("the server does not answer in German")
        tcp = "host=127.0.0.1 port=%s dbname=postgres user=trainer" % port

        def train(name, dsn, password=env["password"], query="SELECT x, label FROM rows_"):
            args = command + ["--set", "data.source=postgres", "--set", "data.dsn=" + dsn, "--set", "data.query=" + query,
                              "--set", "data.labels=label", "--set", "device=cpu", "--set", "train.epochs=1",
                              "--set", "logging.dir=" + os.path.join(workdir, name), "--set", "checkpoint.resume=never"]
            result = subprocess.run(args, capture_output=True, text=True, timeout=120, env=dict(os.environ, PGPASSWORD=password))
            return result.returncode, result.stderr

        def expect(name, got, code, *words):
            returncode, err = got
            missing = [w for w in words if w not in err]
            if returncode != code or missing or "start the server" in err or "Traceback" in err:
                fail("%s: exit %d, expected %d with %s:\n%s" % (name, returncode, code, missing, err))
            print("ok: %s: exit %d, %s" % (name, code, err.strip().splitlines()[0][:160]))

        expect("a wrong password", train("password", tcp, password="wrong"), 2, "refused the login", "Passwort-Authentifizierung")
        expect("a database that does not exist", train("database", tcp.replace("dbname=postgres", "dbname=nodb")), 2, "refused the login")
        expect("a setting of data.dsn's options the server refuses",
               train("options", tcp + " options='-c statement_timeout=abc'"), 2, "refused data.dsn's options setting 'statement_timeout'")
        expect("a role at its connection limit", train("crowded", "host=%s port=%s dbname=postgres user=crowded" % (home, port)), 3,
               "takes no more connections", "CONNECTION LIMIT")
        expect("a query that names no column", train("typo", tcp, query="SELECT x, labl FROM rows_"), 2,
               "PostgreSQL says: Spalte", "zu verweisen; fix data.query")
        slow = "SELECT x, label FROM rows_, pg_sleep(3)"
        expect("the session's statement_timeout", train("timeout", tcp + " options='-c statement_timeout=500'", query=slow), 1,
               "ended data.query at its statement_timeout", "statement_timeout=0")

        def cancel_the_read():  # as a watchdog or an administrator does
            deadline = time.time() + 60
            while time.time() < deadline and sql("SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity "
                                                 "WHERE query LIKE 'COPY (%' AND usename = 'trainer'") == "0":
                time.sleep(0.2)

        canceller = threading.Thread(target=cancel_the_read)
        canceller.start()
        expect("a cancel by another session, under a statement_timeout it did not reach",
               train("cancelled", tcp + " options='-c statement_timeout=60s'", query=slow), 1, "at another session's request")
        canceller.join()
    finally:
        pg_server.stop(server)


if __name__ == "__main__":
    main()
