#!/usr/bin/env python3
"""A real MLflow tracking server for the mlflow tests, on 127.0.0.1 with a sqlite store.

MLflow lives in a venv of its own (~/.cache/gputrain/mlflow-venv-<hash of requirements.txt
beside this file>), made on first use from PyPI: its server's dependencies (Flask, SQLAlchemy,
pandas) stay out of the torch venv the build uses. mlflow-skinny plus the server's dependencies is
a third of the full `mlflow` package (no scikit-learn, scipy, matplotlib, pyarrow).

As a module: Server(folder).start() / .pause() / .kill() / .stop(), and client() for MLflow's
Python client (run in the venv's interpreter: see python_in_venv()).
As a command:  mlflow_server.py venv   makes the venv (and says its interpreter), or exits 77 with
the reason when PyPI cannot be reached.
"""
import hashlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REQUIREMENTS = os.path.join(HERE, "requirements.txt")


def venv_dir():
    with open(REQUIREMENTS, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    cache = os.environ.get("GPUTRAIN_CACHE", os.path.expanduser("~/.cache/gputrain"))
    return os.path.join(cache, f"mlflow-venv-{digest}")


def ensure_venv():
    """The venv's directory; None and the reason when it cannot be made."""
    venv = venv_dir()
    if os.path.exists(os.path.join(venv, ".complete")):
        return venv, None
    shutil.rmtree(venv, ignore_errors=True)
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    steps = [[sys.executable, "-m", "venv", venv],
             [os.path.join(venv, "bin", "pip"), "install", "--quiet", "--progress-bar", "off", "-r", REQUIREMENTS]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            return None, f"cannot install MLflow from PyPI ({' '.join(step[:3])}...): {done.stderr.strip()[-400:]}"
    open(os.path.join(venv, ".complete"), "w").close()
    return venv, None


def python_in_venv():
    return os.path.join(venv_dir(), "bin", "python")


def run_script_in_venv(script):
    """Makes `script` (a check importing mlflow) run under the venv's interpreter: returns when mlflow
    is importable here, else execs the script there; exits 77 (skipped) when no venv can be made."""
    try:
        import mlflow  # noqa: F401
        return
    except ImportError:
        pass
    _, why = ensure_venv()
    if why:
        print(f"SKIP: {why}")
        sys.exit(77)
    os.execv(python_in_venv(), [python_in_venv(), os.path.abspath(script)] + sys.argv[1:])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`mlflow server` in `folder` (its sqlite file and artifacts), in a process group of its own
    so that pause() and kill() reach its workers too. `auth` (user, password): MLflow's basic-auth
    app, with that user as its admin; with `token` too, the app takes that bearer token for the
    user instead of the password (bearer_auth.py, MLflow's custom authorization_function)."""

    def __init__(self, folder, port=None, auth=None, token=None, tls=None):
        self.folder = folder
        self.port = port or free_port()
        self.auth = auth
        self.token = token
        self.tls = tls  # (certificate, key) PEM files: the server speaks https (uvicorn's TLS)
        self.process = None
        os.makedirs(folder, exist_ok=True)

    @property
    def uri(self):
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def start(self, timeout=180):
        venv = venv_dir()
        command = [os.path.join(venv, "bin", "mlflow"), "server", "--host", "127.0.0.1", "--port", str(self.port),
                   "--workers", "1", "--backend-store-uri", f"sqlite:///{os.path.join(self.folder, 'mlflow.db')}",
                   "--artifacts-destination", os.path.join(self.folder, "artifacts")]
        env = dict(os.environ)
        context = None
        if self.tls:
            command += ["--uvicorn-opts", f"--ssl-certfile {self.tls[0]} --ssl-keyfile {self.tls[1]}"]
            context = ssl.create_default_context(cafile=self.tls[0])
        if self.auth:
            command += ["--app-name", "basic-auth"]
            env["MLFLOW_AUTH_CONFIG_PATH"] = self.write_auth_config()
            env["MLFLOW_FLASK_SERVER_SECRET_KEY"] = "gputrain-test-only"  # the auth app's CSRF key
        if self.token:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.dirname(os.path.abspath(__file__)), env.get("PYTHONPATH")]))
            env.update(GPUTRAIN_TEST_MLFLOW_TOKEN=self.token, GPUTRAIN_TEST_MLFLOW_USER=self.auth[0])
        log = open(os.path.join(self.folder, "server.log"), "ab")
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=self.folder, env=env)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"mlflow server exited {self.process.returncode}; see {self.folder}/server.log")
            try:
                with urllib.request.urlopen(self.uri + "/health", timeout=2, context=context) as answer:
                    if answer.status == 200:
                        return self
            except urllib.error.HTTPError as e:
                if e.code in (401, 403):  # it answers, asking who we are
                    return self
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"mlflow server did not answer on {self.uri} within {timeout} s; see {self.folder}/server.log")

    def write_auth_config(self):
        path = os.path.join(self.folder, "basic_auth.ini")
        with open(path, "w") as f:
            f.write("[mlflow]\ndefault_permission = READ\n"
                    f"database_uri = sqlite:///{os.path.join(self.folder, 'auth.db')}\n"
                    f"admin_username = {self.auth[0]}\nadmin_password = {self.auth[1]}\n"
                    "authorization_function = " + ("bearer_auth:authenticate_request_bearer_token" if self.token else
                                                   "mlflow.server.auth:authenticate_request_basic_auth") + "\n"
                    "grant_default_workspace_access = false\n")
        return path

    def signal(self, sig):
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, sig)

    def pause(self):
        """Stops answering, with its port still open: a slow server."""
        self.signal(signal.SIGSTOP)

    def kill(self):
        self.signal(signal.SIGKILL)
        if self.process:
            self.process.wait()

    def stop(self):
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        if self.process:
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


if __name__ == "__main__":
    if sys.argv[1:] != ["venv"]:
        sys.exit(__doc__)
    venv, why = ensure_venv()
    if why:
        print(f"SKIP: {why}")
        sys.exit(77)
    print(python_in_venv())
