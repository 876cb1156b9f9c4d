"""How runs end and where they go (docs/tracking.md): a script that dies on an
exception ends its run FAILED, a process killed outright has its run ended
KILLED by the server once its heartbeats stop, MLflow's variables pick the
server, the experiment and the run to go on with, and a server without
--artifacts keeps artifacts beside its store."""
import os
import signal
import subprocess
import sys
import textwrap
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "server"))
from tracking_server_fixture import TrackingServer  # noqa: E402

DEADLINE_S = 30
PYTHON = os.path.join(os.path.dirname(__file__), "..", "..", "python")


def script_env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MLFLOW_") and k != "COHORT_TRACKING_URI"}
    env.update(PYTHONPATH=PYTHON, COHORT_TRACKING_SPOOL=str(tmp_path / "spool"), **extra)
    return env


def write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text("import sys, time\nimport cohort.track\n" + textwrap.dedent(body))
    return str(path)


def run_info(server, run_id):
    status, body = server.get("runs/get", run_id=run_id)
    assert status == 200, body
    run = body["run"]
    return run["info"], {t["key"]: t["value"] for t in run["data"].get("tags", [])}


def wait_status(server, run_id, want):
    deadline = time.monotonic() + DEADLINE_S
    while True:
        info, tags = run_info(server, run_id)
        if info["status"] == want:
            return info, tags
        assert time.monotonic() < deadline, f"run {run_id} stayed {info['status']}, not {want}"
        time.sleep(0.1)


def test_a_script_that_raises_ends_its_run_failed_and_one_that_returns_finished(tmp_path):
    server = TrackingServer(tmp_path)
    try:
        env = script_env(tmp_path, COHORT_TRACKING_URI=server.url)
        raises = write(tmp_path, "raises.py", """
            run = cohort.track.init(project="endings")
            print(run.id, flush=True)
            run.log({"loss": 1.0}, step=0)
            raise RuntimeError("diverged")
        """)
        out = subprocess.run([sys.executable, raises], env=env, capture_output=True, text=True,
                             timeout=DEADLINE_S)
        assert out.returncode == 1 and "RuntimeError: diverged" in out.stderr, out.stderr
        info, _ = run_info(server, out.stdout.split()[0])
        assert info["status"] == "FAILED" and info["end_time"] >= info["start_time"]
        returns = write(tmp_path, "returns.py", """
            run = cohort.track.init(project="endings")
            print(run.id, flush=True)
        """)
        out = subprocess.run([sys.executable, returns], env=env, capture_output=True, text=True,
                             timeout=DEADLINE_S)
        assert out.returncode == 0, out.stderr
        assert run_info(server, out.stdout.split()[0])[0]["status"] == "FINISHED"
    finally:
        server.stop()


def test_a_killed_process_has_its_run_ended_when_its_heartbeats_stop(tmp_path):
    server = TrackingServer(tmp_path)
    procs = []
    try:
        env = script_env(tmp_path, COHORT_TRACKING_URI=server.url, COHORT_TRACKING_HEARTBEAT="0.5")
        train = write(tmp_path, "train.py", """
            run = cohort.track.init(project="endings", system_metrics_s=None)
            print(run.id, flush=True)
            step = 0
            while True:
                run.log({"loss": 1.0 / (step + 1)}, step=step)
                step += 1
                time.sleep(0.05)
        """)
        ids = []
        for _ in range(2):
            p = subprocess.Popen([sys.executable, train], env=env, stdout=subprocess.PIPE,
                                 text=True)
            procs.append(p)
            ids.append(p.stdout.readline().split()[0])
        _, tags = run_info(server, ids[0])
        assert int(tags["cohort.alive_until"]) > time.time() * 1000
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait(timeout=DEADLINE_S)
        killed_at = time.monotonic()
        info, tags = wait_status(server, ids[0], "KILLED")
        assert time.monotonic() - killed_at < 10  # 3 beats of 0.5 s, checked every second
        assert "stopped sending heartbeats" in tags["cohort.end_reason"]
        assert info["end_time"] <= time.time() * 1000
        # The live one beats on: still RUNNING well past its first deadlines.
        assert run_info(server, ids[1])[0]["status"] == "RUNNING"
        procs[1].send_signal(signal.SIGTERM)
        procs[1].wait(timeout=DEADLINE_S)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        server.stop()


def test_mlflow_variables_pick_the_server_the_experiment_and_the_run(tmp_path):
    server = TrackingServer(tmp_path)
    try:
        env = script_env(tmp_path, MLFLOW_TRACKING_URI=server.url,
                         MLFLOW_EXPERIMENT_NAME="from-mlflow")
        log = write(tmp_path, "log.py", """
            run = cohort.track.init(config={"lr": 0.1})
            run.log({"loss": float(sys.argv[1])}, step=int(sys.argv[1]))
            run.finish()
            print(run.id, run.experiment_id, flush=True)
        """)
        out = subprocess.run([sys.executable, log, "0"], env=env, capture_output=True, text=True,
                             timeout=DEADLINE_S)
        assert out.returncode == 0, out.stderr
        run_id, experiment_id = out.stdout.split()
        status, body = server.get("experiments/get-by-name", experiment_name="from-mlflow")
        assert status == 200 and body["experiment"]["experiment_id"] == experiment_id
        # MLFLOW_RUN_ID: the same run goes on, RUNNING again until it finishes.
        out = subprocess.run([sys.executable, log, "1"], env=dict(env, MLFLOW_RUN_ID=run_id),
                             capture_output=True, text=True, timeout=DEADLINE_S)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == [run_id, experiment_id]
        status, body = server.get("metrics/get-history", run_id=run_id, metric_key="loss")
        assert sorted(m["step"] for m in body["metrics"]) == [0, 1]
        assert run_info(server, run_id)[0]["status"] == "FINISHED"
        # A run that does not exist, and an MLflow store cohort's client cannot open.
        out = subprocess.run([sys.executable, log, "2"], env=dict(env, MLFLOW_RUN_ID="nope"),
                             capture_output=True, text=True, timeout=DEADLINE_S)
        assert out.returncode == 1
        assert "run 'nope' to go on with (MLFLOW_RUN_ID) does not exist" in out.stderr
        out = subprocess.run([sys.executable, log, "2"],
                             env=dict(env, MLFLOW_TRACKING_URI="file:./mlruns"),
                             capture_output=True, text=True, timeout=DEADLINE_S)
        assert out.returncode == 1
        assert ("MLFLOW_TRACKING_URI='file:./mlruns': cohort's client records to a tracking "
                "server") in out.stderr
        # MLflow's SQLite form: sqlite:///FILE (relative to the working directory).
        out = subprocess.run([sys.executable, log, "3"], cwd=tmp_path,
                             env=dict(env, MLFLOW_TRACKING_URI="sqlite:///mine.db"),
                             capture_output=True, text=True, timeout=DEADLINE_S)
        assert out.returncode == 0, out.stderr
        assert (tmp_path / "mine.db").exists()
    finally:
        server.stop()


def test_a_server_without_artifacts_flag_keeps_them_beside_its_store(tmp_path):
    server = TrackingServer(tmp_path, artifacts=False)
    try:
        (tmp_path / "model.txt").write_text("weights")
        env = script_env(tmp_path, COHORT_TRACKING_URI=server.url)
        save = write(tmp_path, "save.py", """
            run = cohort.track.init(project="arts")
            run.log_artifact(sys.argv[1])
            run.finish()
            print(run.id, run.experiment_id, flush=True)
        """)
        out = subprocess.run([sys.executable, save, str(tmp_path / "model.txt")], env=env,
                             capture_output=True, text=True, timeout=DEADLINE_S)
        assert out.returncode == 0, out.stderr
        run_id, experiment_id = out.stdout.split()
        path = f"{experiment_id}/{run_id}/artifacts/model.txt"
        status, body = server.request("GET", "/api/2.0/mlflow-artifacts/artifacts/" + path)
        assert (status, body) == (200, b"weights")
        assert (tmp_path / "artifacts" / path).read_text() == "weights"
    finally:
        server.stop()


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_run_started_while_the_server_is_down_is_spooled_with_its_artifacts(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = script_env(tmp_path, COHORT_TRACKING_URI=url)
    (tmp_path / "model.txt").write_text("weights")
    offline = write(tmp_path, "offline.py", """
        run = cohort.track.init(project="offline", config={"lr": 0.1})
        for step in range(5):
            run.log({"loss": 1.0 / (step + 1)}, step=step)
        run.log_artifact(sys.argv[1])
        run.log_artifact(sys.argv[1], "again.txt")
        run.finish()
        print(run.id, flush=True)
    """)
    out = subprocess.run([sys.executable, offline, str(tmp_path / "model.txt")], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=DEADLINE_S)
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.split()[0]
    said = [x for x in out.stderr.splitlines() if x.startswith("cohort.track:")]
    assert len(said) == 2, out.stderr
    assert said[0].startswith("cohort.track: the tracking server cannot be reached (")
    assert said[0].endswith(f"); run {run_id} is recorded in the spool {tmp_path / 'spool'} and "
                            "sent when the server is back"), said[0]
    assert said[1] == ("cohort.track: the tracking server cannot be reached; artifacts wait in "
                       f"{tmp_path / 'spool' / 'artifacts'} and are uploaded when it is back")
    assert len(os.listdir(tmp_path / "spool" / "artifacts")) == 2
    # (Run outside the repository: no git diff artifact.) The spool is bounded: an
    # artifact beyond COHORT_TRACKING_SPOOL_BYTES is refused by name.
    out = subprocess.run([sys.executable, offline, str(tmp_path / "model.txt")],
                         env=dict(env, COHORT_TRACKING_SPOOL_BYTES="20"), cwd=tmp_path,
                         capture_output=True,
                         text=True, timeout=DEADLINE_S)
    assert out.returncode == 1
    assert "would pass COHORT_TRACKING_SPOOL_BYTES (20 bytes; 14 held): 'model.txt' was not " \
           "kept" in out.stderr, out.stderr
    server = TrackingServer(tmp_path, ["--port", str(port)])
    try:
        # The next run on this host replays the spool the first one left.
        later = write(tmp_path, "later.py", """
            run = cohort.track.init(project="offline")
            run.finish()
        """)
        out = subprocess.run([sys.executable, later], env=env, cwd=tmp_path, capture_output=True,
                             text=True,
                             timeout=DEADLINE_S)
        assert out.returncode == 0, out.stderr
        info, _ = run_info(server, run_id)
        assert info["status"] == "FINISHED"
        status, body = server.get("experiments/get-by-name", experiment_name="offline")
        assert info["experiment_id"] == body["experiment"]["experiment_id"]
        status, body = server.get("metrics/get-history", run_id=run_id, metric_key="loss")
        assert sorted(m["step"] for m in body["metrics"]) == [0, 1, 2, 3, 4]
        base = f"/api/2.0/mlflow-artifacts/artifacts/{info['experiment_id']}/{run_id}/artifacts/"
        for name in ("model.txt", "again.txt"):
            assert server.request("GET", base + name) == (200, b"weights")
        assert os.listdir(tmp_path / "spool" / "artifacts") == []
        assert not [f for f in os.listdir(tmp_path / "spool") if f.endswith(".jsonl")]
    finally:
        server.stop()
