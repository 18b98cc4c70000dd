#!/usr/bin/env python3
"""Training from a standby (a read replica), as teams read their analytics data: it reads over
several COPY streams, and a read the standby cancels to replay the primary's changes (a recovery
conflict) ends the run with exit 1 and what to set, not "fix data.query", which a user saw before.

Usage: check_standby.py WORKDIR -- GPUTRAIN...

Starts a primary of its own (tests/postgres/pg_server.py), makes a standby of it with
pg_basebackup (max_standby_streaming_delay=0: it cancels at once what conflicts), trains from the
standby over 2 streams (exit 0), then starts a slow read there (the standby answering in German
where the machine can build the locale, as tests/postgres/pg_server.py does) (pg_sleep every 20,000 rows), and
once the standby shows it running, deletes and vacuums those rows on the primary. Exits 77
(skipped) on a machine without the server binaries.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pg_server  # noqa: E402
from pg_server import fail  # noqa: E402

SLOW_QUERY = "SELECT x, label FROM rows_ WHERE x::int % 20000 <> 0 OR pg_sleep(1) IS NOT NULL"


def main():
    workdir, command = pg_server.workdir_and_command(__doc__)
    primary = os.path.join(workdir, "primary")
    env = pg_server.start_or_skip(primary)
    home, binaries, port = env["socket_dir"], env["bin_dir"], int(env["port"])
    standby, standby_port = os.path.join(home, "standby"), pg_server.free_port()
    running, started = None, time.time()
    try:
        def psql(on_port, *sql):
            args = [os.path.join(binaries, "psql"), "-h", home, "-p", str(on_port), "-U", "gputrain", "-d", "postgres", "-tA",
                    "-v", "ON_ERROR_STOP=1"]
            for statement in sql:
                args += ["-c", statement]
            return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()

        psql(port, "CREATE TABLE rows_ AS SELECT g::float4 AS x, (g % 2) AS label FROM generate_series(1, 200000) g")
        pg_server.run([os.path.join(binaries, "pg_basebackup"), "-h", home, "-p", str(port), "-U", "gputrain", "-D", standby, "-R", "-c", "fast",
                       "-X", "stream"])
        options = "-k %s -p %d -c listen_addresses='' -c max_standby_streaming_delay=0 -c hot_standby_feedback=off" % (home, standby_port)
        # In German where this machine can: the standby is then told by what it reports, not its words.
        language, environment, absent = pg_server.german_messages(home)
        print("the standby answers in " + ("English: " + absent if absent else "German"), flush=True)
        pg_server.run([os.path.join(binaries, "pg_ctl"), "-D", standby, "-o", options + (language or ""), "-l",
                       os.path.join(home, "standby.log"), "-w", "-t", "60", "start"], env=environment)
        if psql(standby_port, "SELECT pg_is_in_recovery()") != "t":
            fail("the standby is not in recovery")
        dsn = "host=%s port=%d user=gputrain dbname=postgres" % (home, standby_port)
        base = command + ["--set", "data.source=postgres", "--set", "data.dsn=" + dsn, "--set", "data.labels=label",
                          "--set", "device=cpu", "--set", "train.epochs=1", "--set", "train.batch_size=4096",
                          "--set", "checkpoint.resume=never", "--set", "logging.progress=lines"]
        whole = subprocess.run(base + ["--set", "data.query=SELECT x, label FROM rows_", "--set", "data.streams=2",
                                       "--set", "logging.dir=" + os.path.join(workdir, "whole")], capture_output=True, text=True, timeout=300)
        if whole.returncode != 0 or "200000 rows, read over 2 COPY streams" not in whole.stdout + whole.stderr:
            fail("training from the standby over 2 streams: exit %d\n%s%s" % (whole.returncode, whole.stdout, whole.stderr))
        print(f"{time.time() - started:.1f} s: trained from the standby", flush=True)
        running = subprocess.Popen(base + ["--set", "data.query=" + SLOW_QUERY, "--set", "data.streams=1",
                                           "--set", "logging.dir=" + os.path.join(workdir, "cancelled")],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while psql(standby_port, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'COPY (%'") == "0":
            if running.poll() is not None or time.time() > deadline:
                fail("the slow read never showed on the standby:\n" + running.communicate()[1])
            time.sleep(0.2)
        print(f"{time.time() - started:.1f} s: the slow read runs on the standby", flush=True)
        psql(port, "DELETE FROM rows_ WHERE label = 0", "VACUUM rows_", "CHECKPOINT")
        _, err = running.communicate(timeout=120)
        print(f"{time.time() - started:.1f} s: the run ended", flush=True)
        print(err[-1500:])
        if running.returncode != 1 or "a standby, cancelled data.query's read" not in err or "hot_standby_feedback = on" not in err:
            fail("exit %d; expected 1 naming the standby's cancel with hot_standby_feedback as the fix" % running.returncode)
        if "fix data.query" in err or "Traceback" in err:
            fail("the wrong fix, or a traceback, shows")
        print("ok: a standby's recovery conflict ended the run with exit 1 and what to set")
    finally:
        if running and running.poll() is None:
            running.kill()
        if os.path.isdir(standby):
            subprocess.run(pg_server.as_server_user([os.path.join(binaries, "pg_ctl"), "-D", standby, "-m", "immediate", "-w", "stop"]),
                           capture_output=True)
        pg_server.stop(primary)


if __name__ == "__main__":
    main()
