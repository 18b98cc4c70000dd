#!/usr/bin/env python3
"""logging.mlflow against MLflow as teams run it: experiments and runs deleted in its UI, its
permissions, and addresses where something other than the tracking API answers (a sign-in page in
front of it, another web server, the wrong scheme). Each run trains on (exit 0, or 130 on its
SIGTERM) and says once what went wrong, with the fix; none waits on a server that will never take
its metrics. The servers are real: `mlflow server` (mlflow_server.py) and, for what stands in front
of it, Python's own http.server.

Usage: check_mlflow_teams.py CASE WORKDIR -- GPUTRAIN_TRAIN_COMMAND...

  deleted_experiments_and_runs: an experiment deleted on the server is named with the command that
      restores it, and once restored the same command logs to it; a resumed run whose MLflow run
      was deleted logs to a new one; a run deleted while training (or its experiment, which deletes its runs) is one warning, and nothing more
      is sent to it (no refusal of each later batch, of its files, of its status).
  permissions: MLflow's basic-auth app: a user who may not EDIT another's experiment is told so by
      name (HTTP 403) with the fix; once an admin grants EDIT the same command logs; a run with no
      credentials is told which variables to set (HTTP 401).
  environment_names_the_experiment_and_run: MLflow's own variables, as its clients read them:
      MLFLOW_EXPERIMENT_ID alone puts the run in that experiment; one the server lacks, or one that
      is not MLFLOW_EXPERIMENT_NAME's, is refused once; MLFLOW_RUN_ID (a run a pipeline made) gets
      the run's params, metrics and status, and no other run is made.
  not_mlflow_at_the_address: a sign-in redirect, a sign-in page, a web server without MLflow's API,
      https:// to a plain-HTTP server and http:// to a TLS one: each named, with the address to use
      where it can be known; a redirect of the API to https names that address, which then logs.
      Behind a proxy that serves MLflow under a path prefix and takes no request over 100 kB, the
      run logs, and the model too large for it is one warning naming the proxy's limit.

Exits 77 (skipped, with the reason) only when MLflow cannot be installed from PyPI.
"""
import http.server
import os
import signal
import socketserver
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mlflow_server  # noqa: E402

mlflow_server.run_script_in_venv(__file__)  # MLflow's client lives in the venv the server runs from

from check_mlflow import (AUTH_APP_TIMEOUT, STEPS_PER_EPOCH, fail, records, run_case, self_signed_certificate,  # noqa: E402
                          the_run, train, wait_for_losses, warnings_in)
from mlflow.tracking import MlflowClient  # noqa: E402


def one_warning(output, *words):
    said = warnings_in(output)
    if len(said) != 1 or any(w not in said[0] for w in words):
        fail(f"{len(said)} mlflow warnings, not one saying {words}:\n{output}")
    return said[0]


def deleted_experiments_and_runs(workdir, command):
    server = mlflow_server.Server(os.path.join(workdir, "server")).start()
    client = MlflowClient(server.uri)
    settings = ["--set", f"logging.mlflow.tracking_uri={server.uri}"]
    try:
        gone = client.create_experiment("gone")
        client.delete_experiment(gone)
        output, _ = train(command, os.path.join(workdir, "gone1"), settings + ["--set", "logging.mlflow.experiment=gone"])
        one_warning(output, "experiment 'gone' is deleted on the server", f"mlflow experiments restore --experiment-id {gone}")
        client.restore_experiment(gone)
        train(command, os.path.join(workdir, "gone2"), settings + ["--set", "logging.mlflow.experiment=gone"])
        if the_run(client, "gone").info.status != "FINISHED":
            fail("the restored experiment did not get the run")

        run_dir = os.path.join(workdir, "kept")
        train(command, run_dir, settings + ["--set", "logging.mlflow.experiment=kept"], epochs=2)
        first = the_run(client, "kept").info.run_id
        client.delete_run(first)
        output, _ = train(command, run_dir, settings + ["--set", "logging.mlflow.experiment=kept"], epochs=3)
        if warnings_in(output) or f"run {first} is deleted on the server" not in output or "logging to a new run" not in output:
            fail(f"the resume of a run deleted in MLflow did not say so and log to a new run:\n{output}")
        resumed = the_run(client, "kept")  # the active one
        steps = sorted(m.step for m in client.get_metric_history(resumed.info.run_id, "train/loss"))
        if resumed.info.run_id == first or steps != [r["step"] for r in records(run_dir, "step") if r["step"] > 2 * STEPS_PER_EPOCH]:
            fail(f"the resume logged to run {resumed.info.run_id} (the deleted one: {first}), train/loss at steps {steps}")
        deleted_mid_run(workdir, command, server, client, "mid-run", lambda run_id: client.delete_run(run_id),
                        lambda run_id: [f"run {run_id} is deleted on the server", f"mlflow runs restore --run-id {run_id}"])
        deleted_mid_run(workdir, command, server, client, "mid-experiment",
                        lambda run_id: client.delete_experiment(client.get_run(run_id).info.experiment_id),
                        lambda run_id: [f"run {run_id} is deleted on the server at {server.uri} with its experiment 'mid-experiment'",
                                        "mlflow experiments restore --experiment-id"])
    finally:
        server.stop()


def deleted_mid_run(workdir, command, server, client, name, delete, words):
    """A run deleted while it trains (`delete(run_id)`: the run, or its experiment with it): one
    warning saying `words(run_id)`, and no request refused after it."""
    run_dir = os.path.join(workdir, name)
    args = command + ["--set", "device=cpu", "--set", "model.name=mlp", "--set", "model.hidden=[16]", "--set", "data.shape=[6]",
                      "--set", "data.samples=8192", "--set", "data.val_samples=16", "--set", "train.batch_size=16",
                      "--set", "train.epochs=1000000", "--set", "train.max_time=600s", "--set", "logging.every_steps=200",
                      "--set", "logging.progress=lines", "--set", f"logging.dir={run_dir}", "--set", "checkpoint.every_epochs=0",
                      "--set", f"logging.mlflow.tracking_uri={server.uri}", "--set", f"logging.mlflow.experiment={name}"]
    run = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_losses(client, name, after=0, seconds=60, what="of the run's start")
        run_id = the_run(client, name).info.run_id
        delete(run_id)
        deadline = time.time() + 60
        while "is deleted on the server" not in open(os.path.join(run_dir, "training.log"), errors="replace").read():
            if time.time() > deadline:
                fail("the run did not say within 60 s that its MLflow run was deleted")
            time.sleep(0.5)
        time.sleep(3)  # batches go on meanwhile: none may be sent, or refused again
        run.send_signal(signal.SIGTERM)
        output = run.communicate(timeout=300)[0]
        if run.returncode != 130:
            fail(f"the run exited {run.returncode} on SIGTERM, not 130:\n{output}")
        one_warning(output, *words(run_id), "nothing more is sent to it")
    finally:
        if run.poll() is None:
            run.kill()


def permissions(workdir, command):
    admin = ("admin", "gputrain-test-password-1")
    server = mlflow_server.Server(os.path.join(workdir, "server"), auth=admin).start()
    settings = ["--set", f"logging.mlflow.tracking_uri={server.uri}", *AUTH_APP_TIMEOUT]
    try:
        os.environ.update(MLFLOW_TRACKING_USERNAME=admin[0], MLFLOW_TRACKING_PASSWORD=admin[1])
        from mlflow.server import get_app_client
        users = get_app_client("basic-auth", tracking_uri=server.uri)
        users.create_user(username="bob", password="gputrain-test-password-2")
        team = MlflowClient(server.uri).create_experiment("team")  # the admin's: bob may READ it only
        bob = {"MLFLOW_TRACKING_USERNAME": "bob", "MLFLOW_TRACKING_PASSWORD": "gputrain-test-password-2"}
        output, _ = train(command, os.path.join(workdir, "refused"), settings + ["--set", "logging.mlflow.experiment=team"], env=bob)
        one_warning(output, "HTTP 403", "user 'bob' lacks MLflow's permission", "may EDIT")
        users.grant_user_permission("bob", "experiment", team, "EDIT")  # MLflow 3.17 (requirements.txt)
        train(command, os.path.join(workdir, "granted"), settings + ["--set", "logging.mlflow.experiment=team"], env=bob)
        if the_run(MlflowClient(server.uri), "team").info.status != "FINISHED":
            fail("bob's run, once granted EDIT, is not FINISHED in MLflow")
        anonymous = {"MLFLOW_TRACKING_USERNAME": "", "MLFLOW_TRACKING_PASSWORD": ""}
        output, _ = train(command, os.path.join(workdir, "anonymous"), settings, env=anonymous)
        one_warning(output, "HTTP 401", "export MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN")
    finally:
        server.stop()


def environment_names_the_experiment_and_run(workdir, command):
    server = mlflow_server.Server(os.path.join(workdir, "server")).start()
    client = MlflowClient(server.uri)
    settings = ["--set", f"logging.mlflow.tracking_uri={server.uri}"]
    try:
        pipeline = client.create_experiment("pipeline")
        train(command, os.path.join(workdir, "by_id"), settings, env={"MLFLOW_EXPERIMENT_ID": pipeline})
        if the_run(client, "pipeline").info.run_name != "by_id":
            fail("MLFLOW_EXPERIMENT_ID did not put the run in its experiment")
        for name, env, words in (("missing", {"MLFLOW_EXPERIMENT_ID": "98765"}, ["MLFLOW_EXPERIMENT_ID is '98765'", "has no such experiment"]),
                                 ("disagree", {"MLFLOW_EXPERIMENT_ID": "98765", "MLFLOW_EXPERIMENT_NAME": "pipeline"},
                                  ["MLFLOW_EXPERIMENT_ID is '98765', but experiment 'pipeline'", "unset one of them"])):
            output, _ = train(command, os.path.join(workdir, name), settings, env=env)
            one_warning(output, *words)
        made = client.create_run(pipeline, run_name="made-by-the-pipeline")
        client.log_param(made.info.run_id, "pipeline.stage", "train")
        run_dir = os.path.join(workdir, "given")
        output, _ = train(command, run_dir, settings, env={"MLFLOW_RUN_ID": made.info.run_id})
        if f"logging to run {made.info.run_id}, which MLFLOW_RUN_ID names" not in output or warnings_in(output):
            fail(f"MLFLOW_RUN_ID's run is not said, or warned of:\n{output}")
        runs = client.search_runs([pipeline])
        run = client.get_run(made.info.run_id)
        steps = sorted(m.step for m in client.get_metric_history(made.info.run_id, "train/loss"))
        if len(runs) != 2 or run.info.status != "FINISHED" or run.data.params.get("optimizer.lr") != "0.05" or \
                run.data.params.get("pipeline.stage") != "train" or steps != [r["step"] for r in records(run_dir, "step")] or \
                not run.data.tags.get("gputrain.version"):
            fail(f"{len(runs)} runs (2 expected); the given run: {run.info.status}, params {run.data.params}, tags {run.data.tags}, "
                 f"train/loss at {steps}")
    finally:
        server.stop()


def front(answer):
    """A web server on 127.0.0.1 that answers every request with answer(request, body) -> (status,
    headers, body)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            sent = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, headers, body = answer(self, sent)
            self.send_response(status)
            for key, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_HEAD = do_PUT = do_GET

        def log_message(self, *args):
            pass
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def proxy(target, prefix, limit, context):
    """A reverse proxy that serves `target` under the path `prefix`, refusing bodies over `limit`
    bytes as nginx's client_max_body_size does."""
    def answer(request, body):
        if len(body) > limit:
            return 413, {"Content-Type": "text/html"}, b"<html><head><title>413 Request Entity Too Large</title></head></html>"
        if not request.path.startswith(prefix + "/"):
            return 404, {"Content-Type": "text/html"}, b"<html><title>404 Not Found</title></html>"
        forwarded = urllib.request.Request(target + request.path[len(prefix):], data=body if request.command != "GET" else None,
                                           method=request.command, headers={"Content-Type": request.headers.get("Content-Type", "")})
        try:
            with urllib.request.urlopen(forwarded, context=context, timeout=60) as got:
                return got.status, {"Content-Type": got.headers.get("Content-Type", "")}, got.read()
        except urllib.error.HTTPError as refused:
            return refused.code, {"Content-Type": refused.headers.get("Content-Type", "")}, refused.read()
    return front(answer)


def behind_a_proxy(workdir, command, server, cert):
    """MLflow under a path prefix, behind a proxy that takes no file over 100 kB: the run is logged,
    its small files too, and the model that is too large is one warning naming the proxy's limit."""
    address = proxy(server.uri, "/mlflow", 100_000, ssl.create_default_context(cafile=cert)) + "/mlflow"
    run_dir = os.path.join(workdir, "proxied")
    output, _ = train(command, run_dir, ["--set", f"logging.mlflow.tracking_uri={address}", "--set", "logging.mlflow.experiment=proxied",
                                         "--set", "model.hidden=[256,256]"])  # weights of about 300 kB
    one_warning(output, "model.safetensors was not uploaded", "HTTP 413", "client_max_body_size")
    client = MlflowClient(server.uri)
    run = the_run(client, "proxied")
    artifacts = sorted(a.path for a in client.list_artifacts(run.info.run_id))
    if run.info.status != "FINISHED" or artifacts != ["config.yaml", "report.json"] or not client.get_metric_history(run.info.run_id, "train/loss"):
        fail(f"behind the proxy: run {run.info.status}, artifacts {artifacts}")


def not_mlflow_at_the_address(workdir, command):
    cert, key = self_signed_certificate(os.path.join(workdir, "tls"))
    server = mlflow_server.Server(os.path.join(workdir, "server"), tls=(cert, key)).start()
    page = b"<!DOCTYPE html><html><head><title>Sign in - Example SSO</title></head><body>...</body></html>"
    sso = front(lambda request, _: (302, {"Location": "https://sso.example.com/oauth2/start?rd=" + request.path}, b""))
    sign_in = front(lambda request, _: (200, {"Content-Type": "text/html"}, page))
    elsewhere = front(lambda request, _: (404, {"Content-Type": "text/html"}, b"<html><title>404 Not Found</title></html>"))
    moved = front(lambda request, _: (308, {"Location": server.uri + request.path}, b""))
    plain = sso.replace("http://", "https://")
    cases = [(sso, ["HTTP 302, sending gputrain to https://sso.example.com/oauth2/start", "MLFLOW_TRACKING_TOKEN"]),
             (sign_in, ["a web page, 'Sign in - Example SSO', where MLflow answers JSON"]),
             (elsewhere, ["has no MLflow tracking API at /api/2.0/mlflow (HTTP 404"]),
             (plain, ["speaks plain HTTP, not TLS", f"set logging.mlflow.tracking_uri to {sso}"]),
             (server.uri.replace("https://", "http://"), ["speaks TLS on that port", f"set logging.mlflow.tracking_uri to {server.uri}"]),
             (moved, [f"sends its clients to {server.uri} (HTTP 308): set logging.mlflow.tracking_uri to {server.uri}"])]
    try:
        baseline = min(train(command, os.path.join(workdir, f"plain{i}"), [])[1] for i in range(2))
        for i, (uri, words) in enumerate(cases):
            output, seconds = train(command, os.path.join(workdir, f"case{i}"), ["--set", f"logging.mlflow.tracking_uri={uri}"])
            one_warning(output, *words)
            if seconds > baseline + 10:
                fail(f"{uri}: the run took {seconds:.1f} s, {baseline:.1f} s without MLflow: it waited on an answer that never changes")
        run_dir = os.path.join(workdir, "followed")  # the address the redirect named, trusted, logs
        train(command, run_dir, ["--set", f"logging.mlflow.tracking_uri={server.uri}", "--set", "logging.mlflow.experiment=moved"],
              env={"MLFLOW_TRACKING_SERVER_CERT_PATH": cert})
        os.environ["MLFLOW_TRACKING_SERVER_CERT_PATH"] = cert
        if the_run(MlflowClient(server.uri), "moved").info.status != "FINISHED":
            fail("the run at the address the redirect named is not FINISHED")
        behind_a_proxy(workdir, command, server, cert)
    finally:
        server.stop()


def main():
    run_case({"deleted_experiments_and_runs": deleted_experiments_and_runs, "permissions": permissions,
              "environment_names_the_experiment_and_run": environment_names_the_experiment_and_run,
              "not_mlflow_at_the_address": not_mlflow_at_the_address}, __doc__)


if __name__ == "__main__":
    main()
