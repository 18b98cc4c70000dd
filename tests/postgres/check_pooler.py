#!/usr/bin/env python3
"""PostgreSQL behind a connection pooler (PgBouncer), as many teams reach their database, and at
its connection limits: training works through it over several COPY streams, and each way a pooler
or a full server refuses gputrain is named with the setting to change. Before, each of these said
"cannot reach PostgreSQL ... start the server" or "the server stopped ... run again once it is
back", and a pool with fewer server connections than streams left the read silent for the
pooler's query_wait_timeout (2 minutes by default).

Usage: check_pooler.py WORKDIR -- GPUTRAIN...

Starts a server of its own (tests/postgres/pg_server.py) and PgBouncer in front of it, with three
pools of one database: 'pooled' (transaction mode), 'one' (transaction mode, one server
connection) and 'stmt' (statement mode). Exits 77 (skipped) without the server binaries or
pgbouncer (Debian: apt-get install pgbouncer).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pg_server  # noqa: E402
from pg_server import fail  # noqa: E402


def pgbouncer_binary():
    return shutil.which("pgbouncer") or next((p for p in ("/usr/sbin/pgbouncer",) if os.path.exists(p)), None)


def start_pgbouncer(folder, env):
    """PgBouncer on 127.0.0.1 at a free port, its pools on the server's socket; returns the port.
    Its files go in a folder under /tmp, which the server's user reaches wherever WORKDIR is (a
    checkout under /root is not), named in FOLDER/home for stop_pgbouncer."""
    stop_pgbouncer(folder)  # one a killed run left
    os.makedirs(folder)
    home = tempfile.mkdtemp(prefix="gputrain-pgb-", dir="/tmp")
    os.chmod(home, 0o755)
    with open(os.path.join(folder, "home"), "w") as f:
        f.write(home)
    port = pg_server.free_port()
    server = "host=%s port=%s dbname=postgres" % (env["socket_dir"], env["port"])
    with open(os.path.join(home, "users.txt"), "w") as f:
        f.write('"gputrain" ""\n')
    with open(os.path.join(home, "pgbouncer.ini"), "w") as f:
        f.write("[databases]\npooled = %s\none = %s pool_size=1\nstmt = %s pool_mode=statement\n" % (server, server, server))
        f.write("[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = %d\nunix_socket_dir =\nauth_type = trust\n" % port)
        f.write("auth_file = %s/users.txt\npool_mode = transaction\ndefault_pool_size = 10\nquery_wait_timeout = 15\n" % home)
        f.write("logfile = %s/pgbouncer.log\npidfile = %s/pgbouncer.pid\n" % (home, home))
    if os.geteuid() == 0:  # it refuses to run as root, as the server does
        for path in [home] + [os.path.join(home, name) for name in os.listdir(home)]:
            shutil.chown(path, "nobody", "nogroup")
    pg_server.run([pgbouncer_binary(), "-d", os.path.join(home, "pgbouncer.ini")])
    for _ in range(100):
        if os.path.exists(os.path.join(home, "pgbouncer.pid")):
            return port
        time.sleep(0.1)
    fail("pgbouncer did not start:\n" + open(os.path.join(home, "pgbouncer.log")).read())


def stop_pgbouncer(folder):
    named = os.path.join(folder, "home")
    home = open(named).read().strip() if os.path.exists(named) else ""
    pidfile = os.path.join(home, "pgbouncer.pid")
    if home.startswith("/tmp/gputrain-pgb-") and os.path.exists(pidfile):
        subprocess.run(["kill", open(pidfile).read().strip()], capture_output=True)
    if home.startswith("/tmp/gputrain-pgb-"):
        shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)


def train(command, workdir, name, dsn, *settings):
    args = command + ["--set", "data.source=postgres", "--set", "data.dsn=" + dsn, "--set", "data.query=SELECT x, label FROM rows_",
                      "--set", "data.labels=label", "--set", "device=cpu", "--set", "train.epochs=1", "--set", "train.batch_size=512",
                      "--set", "logging.dir=" + os.path.join(workdir, name), "--set", "checkpoint.resume=never"]
    for setting in settings:
        args += ["--set", setting]
    started = time.time()
    result = subprocess.run(args, capture_output=True, text=True, timeout=300)
    return result, time.time() - started


def expect(result, name, code, *words):
    said = result.stdout + result.stderr
    if result.returncode != code or any(w not in said for w in words):
        fail("%s: exit %d, expected %d saying %s:\n%s" % (name, result.returncode, code, words, said))
    if code != 0 and ("start the server" in said or "once it is back" in said):
        fail("%s: the wrong fix is still offered:\n%s" % (name, said))
    print("ok: %s: %s" % (name, [line for line in said.strip().splitlines() if words[0] in line][0][:200]))


def main():
    workdir, command = pg_server.workdir_and_command(__doc__)
    if not pgbouncer_binary():
        print("skipped: no pgbouncer on this machine (Debian: apt-get install pgbouncer)")
        sys.exit(77)
    server, bouncer = os.path.join(workdir, "server"), os.path.join(workdir, "pgbouncer")
    env = pg_server.start_or_skip(server)
    psql = [os.path.join(env["bin_dir"], "psql"), "-h", env["socket_dir"], "-p", env["port"], "-U", "gputrain", "-d", "postgres",
            "-v", "ON_ERROR_STOP=1", "-c"]
    try:
        subprocess.run(psql + ["CREATE TABLE rows_ AS SELECT g::float4 AS x, (g % 2) AS label FROM generate_series(1, 20000) g"],
                       check=True, capture_output=True)
        port = start_pgbouncer(bouncer, env)
        dsn = "host=127.0.0.1 port=%d user=gputrain dbname=" % port
        result, _ = train(command, workdir, "pooled", dsn + "pooled", "data.streams=2")
        expect(result, "transaction pooling, 2 streams", 0, "read over 2 COPY streams")
        result, seconds = train(command, workdir, "one", dsn + "one", "data.streams=2")
        expect(result, "a pool of one server connection, 2 streams asked", 0, "did not answer", "reading over 1")
        if seconds > 60:
            fail("the read over one stream took %.0f s: the further stream waited for the pooler's query_wait_timeout" % seconds)
        result, _ = train(command, workdir, "options", dsn + "pooled options='-c statement_timeout=0'")
        expect(result, "options in data.dsn", 2, "refused data.dsn's 'options' setting", "ignore_startup_parameters")
        result, _ = train(command, workdir, "nosuch", dsn + "nosuch")
        expect(result, "a database the pooler does not list", 2, "serves no database 'nosuch'")
        result, _ = train(command, workdir, "stmt", dsn + "stmt")
        expect(result, "statement pooling", 2, "pool_mode = statement", "transaction or session mode")
        # The pool's one server connection held by another client for longer than query_wait_timeout.
        holder = subprocess.Popen([psql[0], "host=127.0.0.1 port=%d user=gputrain dbname=one" % port, "-c", "SELECT pg_sleep(40)"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
        result, _ = train(command, workdir, "busy", dsn + "one")
        holder.kill()
        expect(result, "a pool whose server connection another client holds", 3, "found no free server connection", "queues both")
        subprocess.run(psql + ["ALTER ROLE trainer CONNECTION LIMIT 0"], check=True, capture_output=True)
        result, _ = train(command, workdir, "limit", "host=%s port=%s user=trainer dbname=postgres" % (env["socket_dir"], env["port"]))
        expect(result, "a role at its CONNECTION LIMIT", 3, "takes no more connections", "CONNECTION LIMIT")
    finally:
        stop_pgbouncer(bouncer)
        pg_server.stop(server)


if __name__ == "__main__":
    main()
