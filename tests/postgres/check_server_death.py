#!/usr/bin/env python3
"""The PostgreSQL server dying mid-COPY ends the run with exit 1 and a clear message, never a hang (#49);
so does the read cancelled by another session (pg_cancel_backend), named as a cancel; a read that
waits for another session's lock says so, names it, and stops on Ctrl-C.

Usage: check_server_death.py WORKDIR -- GPUTRAIN...

Starts a server of its own (tests/postgres/pg_server.py: the shared one serves the other tests),
runs `gputrain train` on a query whose rows come slowly (pg_sleep every 10,000 rows) and cancels
it from psql once pg_stat_activity shows it; then runs it again and stops the
server with `pg_ctl -m immediate` (its processes end at once, as in a crash) while the rows
stream, and checks: exit 1 within 60 s, `error: the PostgreSQL server at ... closed the connection
while sending data.query's rows` then its fix, no traceback, and no model written. Exits 77
(skipped) on a machine without the server binaries.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pg_server  # noqa: E402
from pg_server import fail  # noqa: E402

QUERY = ("SELECT g::float4 AS x, (g % 7)::float4 AS y, (g % 2)::int4 AS label FROM generate_series(1, 2000000) g "
         "WHERE g % 10000 <> 0 OR pg_sleep(0.05) IS NOT NULL")


def cancelled(command, env, dsn, run_dir):
    """pg_cancel_backend() from another session (an administrator, a watchdog) is named as such."""
    args = command + ["--set", "data.source=postgres", "--set", "data.dsn=" + dsn, "--set", "data.query=" + QUERY,
                      "--set", "data.labels=label", "--set", "device=cpu", "--set", "logging.dir=" + run_dir + "-cancelled"]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    psql = [os.path.join(env["bin_dir"], "psql"), "-h", env["socket_dir"], "-p", env["port"], "-U", env["user"], "-d", "postgres",
            "-tA", "-c", "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE query LIKE 'COPY (%'"]
    deadline = time.time() + 60
    while subprocess.run(psql, capture_output=True, text=True).stdout.strip() in ("", "0"):
        if process.poll() is not None or time.time() > deadline:
            fail("the read never showed in pg_stat_activity:\n" + process.communicate()[1])
        time.sleep(0.2)
    _, err = process.communicate(timeout=60)
    if process.returncode != 1 or "cancelled data.query's read at another session's request" not in err or "ask who cancelled it" not in err:
        fail(f"pg_cancel_backend: exit {process.returncode}; expected 1 naming the cancel:\n{err}")
    print("ok: pg_cancel_backend ended the run with exit 1, named as a cancel")


def locked(command, env, dsn, run_dir):
    """A table another session holds an ACCESS EXCLUSIVE lock on (an ALTER TABLE, a TRUNCATE of a
    nightly load): Ctrl-C stops the waiting read (exit 130), and after 10 s the wait is said,
    naming the session; the run goes on once the lock is gone."""
    psql = [os.path.join(env["bin_dir"], "psql"), "-h", env["socket_dir"], "-p", env["port"], "-U", env["user"], "-d", "postgres"]
    subprocess.run(psql + ["-c", "CREATE TABLE held AS SELECT g::float4 AS x, g % 2 AS label FROM generate_series(1, 1000) g"],
                   check=True, capture_output=True)
    holder = subprocess.Popen(psql + ["-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    holder.stdin.write("BEGIN; LOCK TABLE held IN ACCESS EXCLUSIVE MODE;\n")
    holder.stdin.flush()
    args = command + ["--set", "data.source=postgres", "--set", "data.dsn=" + dsn, "--set", "data.query=SELECT x, label FROM held",
                      "--set", "data.labels=label", "--set", "device=cpu", "--set", "train.epochs=1", "--set", "checkpoint.resume=never"]
    try:
        time.sleep(1)
        stopped = subprocess.Popen(args + ["--set", "logging.dir=" + run_dir + "-stopped"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        time.sleep(3)
        stopped.send_signal(signal.SIGINT)
        _, err = stopped.communicate(timeout=30)
        if stopped.returncode != 130 or "interrupted while waiting for the PostgreSQL server" not in err:
            fail(f"Ctrl-C while waiting for a lock: exit {stopped.returncode}, not 130 with the wait named:\n{err}")
        waiting = subprocess.Popen(args + ["--set", "logging.dir=" + run_dir + "-locked"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True)
        said = ""
        for line in waiting.stderr:
            said += line
            if "has waited 10 s for a lock that session" in line:
                break
        if "holds on its tables" not in said:
            fail("no word of the lock the read waits for:\n" + said)
        holder.stdin.write("COMMIT;\n")
        holder.stdin.close()
        said += waiting.communicate(timeout=120)[1]
        if waiting.returncode != 0:
            fail(f"once the lock was gone the run exited {waiting.returncode}:\n{said}")
        print("ok: a locked table's wait was said after 10 s and Ctrl-C stopped it; the run went on once the lock was gone")
    finally:
        if holder.poll() is None:
            holder.kill()


def main():
    workdir, command = pg_server.workdir_and_command(__doc__)
    server = os.path.join(workdir, "server")
    env = pg_server.start_or_skip(server)
    try:
        dsn = "host=%s port=%s user=%s dbname=postgres" % (env["socket_dir"], env["port"], env["user"])
        run_dir = os.path.join(workdir, "run")
        args = command + ["--set", "data.source=postgres", "--set", "data.dsn=" + dsn, "--set", "data.query=" + QUERY,
                          "--set", "data.labels=label", "--set", "device=cpu", "--set", "logging.dir=" + run_dir,
                          "--set", "checkpoint.resume=never", "--set", "logging.progress=lines"]
        cancelled(command, env, dsn, run_dir)
        locked(command, env, dsn, run_dir)
        print("+ " + " ".join(args), flush=True)
        process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(3)  # the rows take about 10 s to come
        if process.poll() is not None:
            fail(f"the run ended (exit {process.returncode}) before the server was stopped:\n{process.communicate()[1]}")
        started = time.time()
        pg_server.stop(server)
        try:
            _, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            fail("no end within 60 s of the server's death: a hang")
        print(err[-2000:])
        said = "the PostgreSQL server at " + env["user"] + "@" + env["socket_dir"]
        if process.returncode != 1 or said not in err or "closed the connection while sending data.query's rows" not in err:
            fail(f"exit {process.returncode}; expected 1 and '{said} ... closed the connection'")
        if "fix: nothing was trained" not in err or "Traceback" in err or "terminate called" in err:
            fail("the error lacks its fix, or a traceback shows")
        if os.path.exists(os.path.join(run_dir, "model.safetensors")):
            fail("a model was written from rows cut short")
        print(f"ok: the server's death ended the run in {time.time() - started:.1f} s with exit 1 and the reason")
    finally:
        pg_server.stop(server)


if __name__ == "__main__":
    main()
