#!/usr/bin/env python3
"""A real PostgreSQL server for the postgres tests, in a folder of its own.

  pg_server.py start DIR   initdb into a fresh folder under /tmp (short socket paths, and one the
                           server's user can reach wherever DIR is), start the server on a Unix
                           socket there and on 127.0.0.1 at a free port, make the roles the tests
                           use, and write DIR/server.env (where, port, users). Without the server
                           binaries it writes DIR/absent with the reason instead, and the tests
                           skip saying it.
  pg_server.py stop DIR    stop the server, remove its folder and DIR.

start(DIR, ssl=True) also turns SSL on for TCP, with a self-signed certificate for 'localhost'
made by the openssl command (server.env's ssl_cert names it). start(DIR, german=True) starts a
server that answers in German (lc_messages), as many in Europe do, from a locale built with
localedef into its folder (LOCPATH): no system locale needs installing.

The server refuses to run as root, which CI is: as root, it runs as the unprivileged user
'nobody', which owns DIR. Local (socket) logins are trusted; logins over TCP need a password
(scram-sha-256), which the tests of a wrong password use.
"""
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile

PASSWORD = "gputrain-test-pw"  # the 'trainer' role's: a test value, for a throwaway local server


def bin_dir():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_server_user(command):
    if os.geteuid() != 0:
        return command
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"] + command


def run(command, **kwargs):
    result = subprocess.run(as_server_user(command), capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(command), result.stdout, result.stderr))
    return result.stdout


def self_signed_certificate(home):
    key, cert = os.path.join(home, "server.key"), os.path.join(home, "server.crt")
    subprocess.run(["openssl", "req", "-new", "-x509", "-days", "2", "-nodes", "-subj", "/CN=localhost", "-keyout", key, "-out", cert],
                   check=True, capture_output=True)
    os.chmod(key, 0o600)  # the server refuses a key others may read
    if os.geteuid() == 0:
        for path in (key, cert):
            shutil.chown(path, "nobody", "nogroup")
    return key, cert


def german_messages(home):
    """The server options and environment that make it answer in German, or a reason it cannot:
    a de_DE.UTF-8 locale built into HOME/locales, and the server's German message catalog."""
    if not glob.glob("/usr/share/locale/de/LC_MESSAGES/postgres-*.mo"):
        return None, None, "the PostgreSQL server has no German messages (/usr/share/locale/de/LC_MESSAGES/postgres-*.mo)"
    locales = os.path.join(home, "locales")
    os.makedirs(locales, exist_ok=True)
    built = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", os.path.join(locales, "de_DE.UTF-8")], capture_output=True, text=True)
    if built.returncode not in (0, 1) or not os.path.isdir(os.path.join(locales, "de_DE.UTF-8")):  # 1: built, with warnings
        return None, None, "localedef could not build de_DE.UTF-8 (install Debian's locales package): " + built.stderr.strip()[-300:]
    return " -c lc_messages=de_DE.UTF-8", dict(os.environ, LOCPATH=locales), None


def start(folder, ssl=False, german=False):
    stop(folder)
    os.makedirs(folder)
    binaries = bin_dir()
    if not binaries:
        with open(os.path.join(folder, "absent"), "w") as f:
            f.write("no PostgreSQL server binaries (initdb) on this machine: install Debian's postgresql package")
        return
    home = tempfile.mkdtemp(prefix="gputrain-pg-", dir="/tmp")
    os.chmod(home, 0o755)
    if os.geteuid() == 0:
        shutil.chown(home, "nobody", "nogroup")
    data = os.path.join(home, "data")
    pwfile = os.path.join(home, "pw")
    with open(os.open(pwfile, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(PASSWORD + "\n")
    if os.geteuid() == 0:
        shutil.chown(pwfile, "nobody", "nogroup")
    with open(os.path.join(folder, "server.env"), "w") as f:  # first: stop finds the server even if start fails
        f.write("socket_dir=%s\n" % home)
    run([os.path.join(binaries, "initdb"), "-D", data, "-U", "gputrain", "--auth-local=trust", "--auth-host=scram-sha-256",
         "--pwfile=" + pwfile, "--no-sync", "-E", "UTF8", "--locale=C"])
    port = free_port()
    options = "-k %s -p %d -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" % (home, port)
    cert = ""
    if ssl:
        key, cert = self_signed_certificate(home)
        options += " -c ssl=on -c ssl_cert_file=%s -c ssl_key_file=%s" % (cert, key)
    environment = None
    if german:
        language, environment, absent = german_messages(home)
        if absent:
            with open(os.path.join(folder, "absent"), "w") as f:
                f.write(absent)
            return
        options += language
    run([os.path.join(binaries, "pg_ctl"), "-D", data, "-o", options, "-l", os.path.join(home, "server.log"), "-w", "-t", "60", "start"],
        env=environment)
    psql = [os.path.join(binaries, "psql"), "-h", home, "-p", str(port), "-U", "gputrain", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c"]
    run(psql + ["CREATE ROLE trainer LOGIN PASSWORD '%s'; GRANT pg_read_all_data TO trainer;" % PASSWORD])
    with open(os.path.join(folder, "server.env"), "w") as f:
        f.write("socket_dir=%s\nport=%d\nuser=gputrain\npassword_user=trainer\npassword=%s\nbin_dir=%s\nssl_cert=%s\n"
                % (home, port, PASSWORD, binaries, cert))


def fail(message):
    """Ends a check script: FAIL and the reason, exit 1."""
    print("FAIL: " + message)
    sys.exit(1)


def workdir_and_command(usage):
    """A check script's arguments, WORKDIR -- GPUTRAIN...: the folder (absolute) and the command."""
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(usage)
    return os.path.abspath(sys.argv[1]), sys.argv[3:]


def read_env(folder):
    """server.env as a dict: socket_dir, port, user, password_user, password, bin_dir, ssl_cert."""
    with open(os.path.join(folder, "server.env")) as f:
        return dict(line.strip().split("=", 1) for line in f if "=" in line)


def start_or_skip(folder, ssl=False, german=False):
    """start() for a check script with a server of its own: its server.env, or exit 77 (skipped,
    saying why) on a machine without the server binaries (or, german, what makes it speak German)."""
    start(folder, ssl, german)
    if os.path.exists(os.path.join(folder, "absent")):
        print("skipped: " + open(os.path.join(folder, "absent")).read())
        sys.exit(77)
    return read_env(folder)


def stop(folder):
    env = os.path.join(folder, "server.env")
    if os.path.exists(env):
        home = read_env(folder).get("socket_dir", "")
        data = os.path.join(home, "data")
        binaries = bin_dir()
        if binaries and os.path.isdir(data):
            subprocess.run(as_server_user([os.path.join(binaries, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"]),
                           capture_output=True)
        if home.startswith("/tmp/gputrain-pg-"):
            shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("start", "stop"):
        sys.exit(__doc__)
    (start if sys.argv[1] == "start" else stop)(os.path.abspath(sys.argv[2]))
