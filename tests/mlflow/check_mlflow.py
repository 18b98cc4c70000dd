#!/usr/bin/env python3
"""logging.mlflow against a real `mlflow server` (tests/mlflow/mlflow_server.py), read back with
MLflow's own Python client (#51).

Usage: check_mlflow.py CASE WORKDIR -- GPUTRAIN_TRAIN_COMMAND...

  logs_a_run: a run that names its server through MLFLOW_TRACKING_URI logs the resolved config
      as params, each step line's and epoch's figures as metrics (the values metrics.jsonl has, at
      its steps), its tags, and config.yaml, report.json and model.safetensors (byte for byte) as
      artifacts; the run is FINISHED and named after its folder. A run folder that is not UTF-8
      (Latin-1 bytes) is logged too, its name read as Windows-1252.
  server_away_and_resume: a run goes on while its server is paused (answers nothing) and then
      killed (refuses connections): each run exits 0 with one mlflow warning on the console, and
      ends within a few seconds of its timeout. A resume after the server is back goes on in the
      same MLflow run, whose id the checkpoint kept through the runs that could not reach it.
  server_restarts_mid_run: the server is killed while a run trains and started again on the same
      store; once it has taken steps logged after the kill the run is stopped (SIGTERM, exit 130):
      one mlflow warning, every step line of metrics.jsonl is in MLflow (kept while it was away,
      sent once it answered) and the run is KILLED. A signal, not train.max_time, ends the run:
      an mlflow server restarting on a loaded machine took 36 s, past a fixed run length.
  over_https: a server on https with a self-signed certificate: a run that does not trust it
      trains (exit 0) and says once, with MLFLOW_TRACKING_SERVER_CERT_PATH as the fix, that the
      certificate is not trusted; with that variable (as MLflow's clients take it), or with
      MLFLOW_TRACKING_INSECURE_TLS=true, it is logged; the two together, or a certificate path
      that is no file, are refused before training (exit 2).
  a_failed_run: a run that diverges (exit 1) is FAILED in MLflow, with its metrics so far and
      config.yaml and report.json, whose outcome is failed and whose error is the console's.
  authenticates: a server with MLflow's basic-auth app takes a run logged with
      MLFLOW_TRACKING_USERNAME and _PASSWORD; with a wrong password the run still trains (exit 0),
      says the refusal once (HTTP 401) and logs nothing.
  authenticates_with_a_token: the same app checking bearer tokens (bearer_auth.py, MLflow's
      custom authorization_function) takes a run logged with MLFLOW_TRACKING_TOKEN, which wins
      over a username and password also set; a wrong token is refused once (HTTP 401).

Exits 77 (skipped, with the reason) only when MLflow cannot be installed from PyPI.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
import mlflow_server  # noqa: E402

mlflow_server.run_script_in_venv(__file__)  # MLflow's client lives in the venv the server runs from

from mlflow.tracking import MlflowClient  # noqa: E402

STEPS_PER_EPOCH = 4


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def train(command, run_dir, settings, env=None, epochs=2):
    args = command + ["--set", "device=cpu", "--set", "model.name=mlp", "--set", "model.hidden=[16]", "--set", "data.shape=[6]",
                      "--set", "data.classes=3", "--set", "data.samples=64", "--set", "data.val_samples=16",
                      "--set", "train.batch_size=16", "--set", f"train.epochs={epochs}", "--set", "optimizer.lr=0.05",
                      "--set", "logging.every_steps=1", "--set", "logging.progress=lines", "--set", f"logging.dir={run_dir}",
                      "--set", "checkpoint.resume=auto", *settings]
    started = time.time()
    result = subprocess.run(args, capture_output=True, text=True, errors="replace", env={**os.environ, **(env or {})}, timeout=300)
    if result.returncode != 0:
        fail(f"{' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result.stdout + result.stderr, time.time() - started


def records(run_dir, kind):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [r for r in map(json.loads, f) if r.get("kind") == kind]


def the_run(client, experiment_name):
    experiment = client.get_experiment_by_name(experiment_name)
    if experiment is None:
        fail(f"no experiment '{experiment_name}' on the server")
    runs = client.search_runs([experiment.experiment_id])
    if len(runs) != 1:
        fail(f"experiment '{experiment_name}' has {len(runs)} runs, not 1")
    return runs[0]


def logs_a_run(workdir, command):
    server = mlflow_server.Server(os.path.join(workdir, "server")).start()
    try:
        run_dir = os.path.join(workdir, "run")
        output, _ = train(command, run_dir, ["--set", "logging.mlflow.experiment=gputrain-check"],
                          env={"MLFLOW_TRACKING_URI": server.uri})
        if "mlflow: run 'run' in experiment 'gputrain-check'" not in output:
            fail(f"no line naming the MLflow run:\n{output}")
        client = MlflowClient(server.uri)
        run = the_run(client, "gputrain-check")
        if run.info.status != "FINISHED" or run.info.run_name != "run":
            fail(f"run status {run.info.status}, name {run.info.run_name}: not FINISHED, not named after its folder")
        params = run.data.params
        for key, value in {"optimizer.lr": "0.05", "model.name": "mlp", "model.hidden": "[16]", "train.epochs": "2",
                           "logging.mlflow.tracking_uri": server.uri}.items():
            if params.get(key) != value:
                fail(f"param {key} is {params.get(key)!r}, not {value!r}")
        for key, value in {"gputrain.world_size": "1", "gputrain.device": "cpu", "mlflow.source.name": "gputrain train"}.items():
            if run.data.tags.get(key) != value:
                fail(f"tag {key} is {run.data.tags.get(key)!r}, not {value!r}")
        if not run.data.tags.get("gputrain.version"):
            fail("no gputrain.version tag")
        steps = records(run_dir, "step")
        history = client.get_metric_history(run.info.run_id, "train/loss")
        got = sorted((m.step, m.value) for m in history)
        expected = [(r["step"], r["loss"]) for r in steps]
        if len(got) != len(expected) or any(a[0] != b[0] or abs(a[1] - b[1]) > 1e-6 * max(1, abs(b[1])) for a, b in zip(got, expected)):
            fail(f"train/loss in MLflow {got}; metrics.jsonl's step lines {expected}")
        epochs = records(run_dir, "epoch")
        val = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, "val/loss"))
        if [s for s, _ in val] != [e["step"] for e in epochs] or any(abs(v - e["val_loss"]) > 1e-6 for (_, v), e in zip(val, epochs)):
            fail(f"val/loss in MLflow {val}; metrics.jsonl's epochs {[(e['step'], e['val_loss']) for e in epochs]}")
        artifacts = sorted(a.path for a in client.list_artifacts(run.info.run_id))
        if artifacts != ["config.yaml", "model.safetensors", "report.json"]:
            fail(f"artifacts {artifacts}, not config.yaml, model.safetensors and report.json")
        fetched = client.download_artifacts(run.info.run_id, "model.safetensors", os.path.join(workdir, "fetched"))
        with open(fetched, "rb") as a, open(os.path.join(run_dir, "model.safetensors"), "rb") as b:
            if a.read() != b.read():
                fail("model.safetensors in MLflow differs from the run folder's")
        latin1_run_folder(workdir, command, server, client)
    finally:
        server.stop()


def latin1_run_folder(workdir, command, server, client):
    """A run folder named on a Latin-1 system (the byte 0xE9, not UTF-8): logged all the same, its
    name and params read as Windows-1252 (MLflow takes UTF-8 only)."""
    run_dir = os.fsdecode(os.path.join(os.fsencode(workdir), b"caf\xe9"))
    output, _ = train(command, run_dir, ["--set", "logging.mlflow.experiment=gputrain-latin1"], env={"MLFLOW_TRACKING_URI": server.uri})
    if "warning: mlflow" in output:
        fail(f"a run folder that is not UTF-8 cost the MLflow logging:\n{output}")
    run = the_run(client, "gputrain-latin1")
    if run.info.run_name != "caf\u00e9" or not run.data.params.get("logging.dir", "").endswith("caf\u00e9"):
        fail(f"run name {run.info.run_name!r}, logging.dir {run.data.params.get('logging.dir')!r}: not caf\u00e9")


def warnings_in(output):
    return [line for line in output.splitlines() if line.startswith("warning:") and "mlflow" in line]


def server_away_and_resume(workdir, command):
    server = mlflow_server.Server(os.path.join(workdir, "server")).start()
    run_dir = os.path.join(workdir, "run")
    settings = ["--set", f"logging.mlflow.tracking_uri={server.uri}", "--set", "logging.mlflow.experiment=away",
                "--set", "logging.mlflow.timeout=2s"]
    try:
        train(command, run_dir, settings, epochs=2)  # steps 1-8, with the server up
        run_id = the_run(MlflowClient(server.uri), "away").info.run_id
        baseline = min(train(command, os.path.join(workdir, f"plain{i}"), [], epochs=2)[1] for i in range(2))
        for state, epochs in (("paused", 4), ("killed", 5)):  # steps 9-16, then 17-20: none reach MLflow
            server.pause() if state == "paused" else server.kill()
            output, seconds = train(command, run_dir, settings, epochs=epochs)
            said = warnings_in(output)
            if len(said) != 1:
                fail(f"with the server {state}: {len(said)} mlflow warnings on the console, not 1:\n{output}")
            if seconds > baseline + 15:
                fail(f"with the server {state} the run took {seconds:.1f} s, {baseline:.1f} s without MLflow: it waited on the server")
            if len(records(run_dir, "step")) != epochs * STEPS_PER_EPOCH:
                fail(f"with the server {state}, metrics.jsonl lacks step lines")
        with open(os.path.join(run_dir, "training.log")) as log:
            if "at the run's end" not in log.read():
                fail("training.log does not say what the run's end could not send")
        server = mlflow_server.Server(server.folder, server.port).start()  # the same store, back on its port
        train(command, run_dir, settings, epochs=6)  # steps 21-24
        client = MlflowClient(server.uri)
        run = the_run(client, "away")
        if run.info.run_id != run_id:
            fail(f"the resumed run logged to MLflow run {run.info.run_id}, not {run_id}")
        steps = sorted(m.step for m in client.get_metric_history(run_id, "train/loss"))
        if steps != list(range(1, 9)) + list(range(21, 25)):
            fail(f"train/loss at steps {steps}: not 1-8 (first run) and 21-24 (the resume)")
        if run.info.status != "FINISHED":
            fail(f"run status {run.info.status} after the resume, not FINISHED")
    finally:
        server.stop()


def server_restarts_mid_run(workdir, command):
    server = mlflow_server.Server(os.path.join(workdir, "server")).start()
    run_dir = os.path.join(workdir, "run")
    # Steps until the test stops the run (train.max_time is a safety net only), a step line every
    # 200 steps; epochs of 512 steps, so that their records stay a few hundred metrics (an epoch
    # of 4 steps made thousands, more than a loaded server takes within the end's wait).
    args = command + ["--set", "device=cpu", "--set", "model.name=mlp", "--set", "model.hidden=[16]", "--set", "data.shape=[6]",
                      "--set", "data.classes=3", "--set", "data.samples=8192", "--set", "data.val_samples=16",
                      "--set", "train.batch_size=16", "--set", "train.epochs=1000000", "--set", "train.max_time=600s",
                      "--set", "logging.every_steps=200", "--set", "logging.progress=lines", "--set", f"logging.dir={run_dir}",
                      "--set", "checkpoint.every_epochs=0", "--set", "checkpoint.best_metric=none",
                      "--set", f"logging.mlflow.tracking_uri={server.uri}", "--set", "logging.mlflow.experiment=restart",
                      "--set", "logging.mlflow.timeout=30s"]  # a loaded server's end wait
    run = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        client = MlflowClient(server.uri)
        last_step = wait_for_losses(client, "restart", after=0, seconds=60, what="of the run's start")
        server.kill()
        killed_at = time.time()
        time.sleep(3)  # step lines go on meanwhile, kept by the run
        server = mlflow_server.Server(server.folder, server.port).start()  # the same store, back on its port
        print(f"the server was away {time.time() - killed_at:.1f} s")
        wait_for_losses(client, "restart", after=last_step, seconds=120, what="of the server's return")
        run.send_signal(signal.SIGTERM)
        output = run.communicate(timeout=300)[0]
        if run.returncode != 130:
            fail(f"the run exited {run.returncode} on SIGTERM, not 130:\n{output}")
        if len(warnings_in(output)) != 1:
            fail(f"{len(warnings_in(output))} mlflow warnings on the console, not 1:\n{output}")
        run_info = the_run(client, "restart")
        steps = sorted(m.step for m in client.get_metric_history(run_info.info.run_id, "train/loss"))
        expected = [r["step"] for r in records(run_dir, "step")]
        if steps != expected:
            fail(f"train/loss in MLflow at {len(steps)} steps, metrics.jsonl has {len(expected)}: "
                 f"missing {sorted(set(expected) - set(steps))[:10]}")
        if run_info.info.status != "KILLED":
            fail(f"run status {run_info.info.status} after SIGTERM, not KILLED")
        print(f"every one of the {len(expected)} step lines reached MLflow; the run is KILLED")
    finally:
        if run.poll() is None:
            run.kill()
        server.stop()


def self_signed_certificate(folder):
    """A certificate for 127.0.0.1 (its subjectAltName, which TLS clients check) and its key."""
    import datetime
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import ipaddress
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gputrain test server")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    os.makedirs(folder, exist_ok=True)
    cert_path, key_path = os.path.join(folder, "server.crt"), os.path.join(folder, "server.key")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return cert_path, key_path


def over_https(workdir, command):
    cert, key = self_signed_certificate(os.path.join(workdir, "tls"))
    server = mlflow_server.Server(os.path.join(workdir, "server"), tls=(cert, key)).start()
    plain = {"MLFLOW_TRACKING_SERVER_CERT_PATH": "", "MLFLOW_TRACKING_INSECURE_TLS": ""}
    try:
        settings = ["--set", f"logging.mlflow.tracking_uri={server.uri}"]
        output, _ = train(command, os.path.join(workdir, "untrusted"), settings + ["--set", "logging.mlflow.experiment=untrusted"],
                          env=plain)
        said = warnings_in(output)
        if len(said) != 1 or "does not trust" not in said[0] or "MLFLOW_TRACKING_SERVER_CERT_PATH" not in said[0]:
            fail(f"an untrusted certificate: {len(said)} mlflow warnings, not one naming MLFLOW_TRACKING_SERVER_CERT_PATH:\n{output}")
        for experiment, env in (("trusted", {**plain, "MLFLOW_TRACKING_SERVER_CERT_PATH": cert}),
                                ("insecure", {**plain, "MLFLOW_TRACKING_INSECURE_TLS": "true"})):
            run_dir = os.path.join(workdir, experiment)
            output, _ = train(command, run_dir, settings + ["--set", f"logging.mlflow.experiment={experiment}"], env=env)
            if warnings_in(output):
                fail(f"{experiment}: {warnings_in(output)}")
            os.environ["MLFLOW_TRACKING_SERVER_CERT_PATH"] = cert  # MLflow's own client, reading back
            run = the_run(MlflowClient(server.uri), experiment)
            steps = sorted(m.step for m in MlflowClient(server.uri).get_metric_history(run.info.run_id, "train/loss"))
            if run.info.status != "FINISHED" or steps != [r["step"] for r in records(run_dir, "step")]:
                fail(f"{experiment}: run {run.info.status}, train/loss at steps {steps}")
        both = {"MLFLOW_TRACKING_SERVER_CERT_PATH": cert, "MLFLOW_TRACKING_INSECURE_TLS": "true"}
        for env, expected in ((both, "unset one of them"), ({**plain, "MLFLOW_TRACKING_SERVER_CERT_PATH": cert + ".missing"},
                                                            "not a file this user can read")):
            result = subprocess.run(command + ["--set", "device=cpu", "--set", "model.name=mlp", "--set", "data.shape=[6]",
                                               "--set", "logging.dir=" + os.path.join(workdir, "refused")] + settings,
                                    capture_output=True, text=True, env={**os.environ, **env}, timeout=300)
            if result.returncode != 2 or expected not in result.stderr:
                fail(f"{env}: exit {result.returncode}, not 2 with '{expected}':\n{result.stderr}")
        print("ok: an untrusted certificate is said once with its fix; a trusted or unchecked one logs the run")
    finally:
        server.stop()


def a_failed_run(workdir, command):
    server = mlflow_server.Server(os.path.join(workdir, "server")).start()
    try:
        run_dir = os.path.join(workdir, "run")
        args = command + ["--set", "device=cpu", "--set", "model.name=mlp", "--set", "model.hidden=[16]", "--set", "data.shape=[6]",
                          "--set", "data.classes=3", "--set", "data.samples=64", "--set", "data.val_samples=16",
                          "--set", "train.batch_size=16", "--set", "train.epochs=2", "--set", "optimizer.lr=1e30",
                          "--set", "logging.every_steps=1", "--set", f"logging.dir={run_dir}",
                          "--set", f"logging.mlflow.tracking_uri={server.uri}", "--set", "logging.mlflow.experiment=failed"]
        result = subprocess.run(args, capture_output=True, text=True, timeout=300)
        if result.returncode != 1 or "training diverged" not in result.stderr:
            fail(f"a learning rate of 1e30 exited {result.returncode}, not 1 with 'training diverged':\n{result.stderr}")
        client = MlflowClient(server.uri)
        run = the_run(client, "failed")
        if run.info.status != "FAILED":
            fail(f"the diverged run is {run.info.status} in MLflow, not FAILED")
        if not client.get_metric_history(run.info.run_id, "train/loss"):
            fail("the diverged run's losses before it failed are not in MLflow")
        artifacts = sorted(a.path for a in client.list_artifacts(run.info.run_id))
        if artifacts != ["config.yaml", "report.json"]:
            fail(f"artifacts {artifacts}, not config.yaml and report.json")
        fetched = client.download_artifacts(run.info.run_id, "report.json", os.path.join(workdir, "fetched"))
        with open(fetched) as f:
            report = json.load(f)
        if report["outcome"] != "failed" or "training diverged" not in (report["error"] or ""):
            fail(f"report.json in MLflow: outcome {report['outcome']}, error {report['error']!r}")
    finally:
        server.stop()


def wait_for_losses(client, experiment_name, after, seconds, what):
    """The newest train/loss step on the server once it is past `after`, within `seconds`."""
    deadline = time.time() + seconds
    while True:
        experiment = client.get_experiment_by_name(experiment_name)
        runs = client.search_runs([experiment.experiment_id]) if experiment else []
        steps = [m.step for m in client.get_metric_history(runs[0].info.run_id, "train/loss")] if runs else []
        if steps and max(steps) > after:
            return max(steps)
        if time.time() > deadline:
            fail(f"no train/loss past step {after} reached the server within {seconds} s {what}")
        time.sleep(0.5)


# MLflow's basic-auth app hashes the password on every request (werkzeug's scrypt, about 0.1 s of a
# core each): on two busy cores the run's last metrics, files and status took longer than the
# default 10 s the run's end waits for them (the run stayed RUNNING there). These cases are about
# credentials, not a slow server, so the end may wait longer.
AUTH_APP_TIMEOUT = ["--set", "logging.mlflow.timeout=60s"]


def authenticates(workdir, command):
    user, password = "admin", "gputrain-test-password-1"
    server = mlflow_server.Server(os.path.join(workdir, "server"), auth=(user, password)).start()
    settings = ["--set", f"logging.mlflow.tracking_uri={server.uri}", "--set", "logging.mlflow.experiment=auth", *AUTH_APP_TIMEOUT]
    try:
        credentials = {"MLFLOW_TRACKING_USERNAME": user, "MLFLOW_TRACKING_PASSWORD": password}
        logged, _ = train(command, os.path.join(workdir, "run"), settings, env=credentials)
        output, _ = train(command, os.path.join(workdir, "refused"), settings,
                          env={"MLFLOW_TRACKING_USERNAME": user, "MLFLOW_TRACKING_PASSWORD": "wrong"})
        said = warnings_in(output)
        if len(said) != 1 or "401" not in said[0]:
            fail(f"with a wrong password: {said} (one warning with the server's HTTP 401 expected)")
        os.environ.update(credentials)
        run = the_run(MlflowClient(server.uri), "auth")
        if run.info.status != "FINISHED" or run.data.params.get("optimizer.lr") != "0.05":
            fail(f"the authenticated run: status {run.info.status}, optimizer.lr {run.data.params.get('optimizer.lr')}; "
                 f"its mlflow warnings: {warnings_in(logged)}")
    finally:
        server.stop()


def authenticates_with_a_token(workdir, command):
    user, token = "admin", "gputrain-test-token-7f3a"
    server = mlflow_server.Server(os.path.join(workdir, "server"), auth=(user, "gputrain-test-password-1"), token=token).start()
    settings = ["--set", f"logging.mlflow.tracking_uri={server.uri}", "--set", "logging.mlflow.experiment=token", *AUTH_APP_TIMEOUT]
    try:
        # A token and a (wrong) password both set: MLflow's clients send the token, and so must
        # gputrain; with the line break a token read from a file keeps, trimmed.
        logged, _ = train(command, os.path.join(workdir, "run"), settings,
                          env={"MLFLOW_TRACKING_TOKEN": token + "\n", "MLFLOW_TRACKING_USERNAME": user, "MLFLOW_TRACKING_PASSWORD": "wrong"})
        output, _ = train(command, os.path.join(workdir, "refused"), settings, env={"MLFLOW_TRACKING_TOKEN": "not-" + token})
        said = warnings_in(output)
        if len(said) != 1 or "401" not in said[0]:
            fail(f"with a wrong token: {said} (one warning with the server's HTTP 401 expected)")
        os.environ.pop("MLFLOW_TRACKING_USERNAME", None)
        os.environ.pop("MLFLOW_TRACKING_PASSWORD", None)
        os.environ["MLFLOW_TRACKING_TOKEN"] = token
        run = the_run(MlflowClient(server.uri), "token")  # one: the refused run logs nothing
        if run.info.status != "FINISHED" or run.data.params.get("optimizer.lr") != "0.05":
            fail(f"the run logged with the token: status {run.info.status}, optimizer.lr {run.data.params.get('optimizer.lr')}; "
                 f"its mlflow warnings: {warnings_in(logged)}")
    finally:
        server.stop()


def run_case(cases, usage):
    """Runs the case the command line names (CASE WORKDIR -- COMMAND...) in a fresh WORKDIR."""
    if len(sys.argv) < 4 or sys.argv[3] != "--" or sys.argv[1] not in cases:
        sys.exit(usage)
    case, workdir, command = sys.argv[1], sys.argv[2], sys.argv[4:]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    cases[case](workdir, command)
    print(f"ok: {case}")


def main():
    run_case({"logs_a_run": logs_a_run, "server_away_and_resume": server_away_and_resume, "server_restarts_mid_run": server_restarts_mid_run,
              "over_https": over_https, "authenticates": authenticates, "authenticates_with_a_token": authenticates_with_a_token,
              "a_failed_run": a_failed_run}, __doc__)


if __name__ == "__main__":
    main()
