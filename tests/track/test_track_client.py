"""cohort.track: the Python client over the C++ TrackingRun. Embedded SQLite
and HTTP; a server killed with SIGKILL while the client logs loses nothing
it acknowledged, the spool replays the rest after restart, nothing doubles."""
import os
import signal
import socket
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "server"))
import postgres_cluster  # noqa: E402
from tracking_server_fixture import TrackingServer  # noqa: E402

import cohort.track  # noqa: E402


def history(server, run_id, key):
    status, body = server.get("metrics/get-history", run_id=run_id, metric_key=key)
    assert status == 200, body
    return body.get("metrics", [])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_embedded_sqlite_run(tmp_path):
    db = tmp_path / "t.db"
    (tmp_path / "model.txt").write_text("weights")
    run = cohort.track.init(project="digits", name="emb", config={"lr": 0.1, "layers": 3},
                            uri=f"sqlite:{db}", spool_dir=str(tmp_path / "spool"))
    for step in range(3000):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    run.log({"acc": 0.5})  # step defaults to one past the last
    run.log_artifact(tmp_path / "model.txt")
    run.finish()
    run_id = run.id
    with pytest.raises(ValueError, match="log_artifact: the run has finished"):
        run.log_artifact(tmp_path / "model.txt")
    # The store is free again: a server opens it and sees everything.
    server = TrackingServer(tmp_path, ["--store", f"sqlite:{db}"])
    try:
        points = history(server, run_id, "loss")
        assert [p["step"] for p in points] == list(range(3000))
        assert history(server, run_id, "acc") == [
            {"key": "acc", "value": 0.5, "timestamp": history(server, run_id, "acc")[0]["timestamp"],
             "step": 3000}]
        info = server.get("runs/get", run_id=run_id)[1]["run"]
        assert info["info"]["status"] == "FINISHED" and info["info"]["run_name"] == "emb"
        assert {p["key"]: p["value"] for p in info["data"]["params"]} == {"lr": "0.1", "layers": "3"}
        tags = {t["key"]: t["value"] for t in info["data"]["tags"]}
        assert tags["cohort.command"].startswith(sys.executable)
        assert tags["cohort.world_size"] == "1"
        assert tags["cohort.python"].count(".") == 2
    finally:
        server.stop()
    artifact = tmp_path / "artifacts" / info["info"]["experiment_id"] / run_id / "artifacts" / "model.txt"
    assert artifact.read_text() == "weights"


def test_http_run_and_bad_input(tmp_path):
    server = TrackingServer(tmp_path)
    try:
        with cohort.track.init(project="http", name="h", uri=server.url,
                               spool_dir=str(tmp_path / "spool")) as run:
            for step in range(2500):
                run.log({"loss": float(step), "lr": 0.1}, step=step)
            run.flush()
            assert len(history(server, run.id, "loss")) == 2500
            with pytest.raises(TypeError, match="log: values must be a dict"):
                run.log([1, 2])
            with pytest.raises(TypeError, match="log: the value of 'x' must be a number, got <class 'str'>"):
                run.log({"x": "abc"})
            run.log({"../bad": 1.0})
            with pytest.raises(ValueError, match="metric key"):
                run.flush()
        assert server.get("runs/get", run_id=run.id)[1]["run"]["info"]["status"] == "FINISHED"
    finally:
        server.stop()


def test_a_postgresql_uri_is_refused_naming_the_server_to_use(tmp_path):
    uri = "postgresql://alice:pw@127.0.0.1:5432/track"
    with pytest.raises(ValueError) as raised:
        cohort.track.init(project="x", uri=uri, spool_dir=str(tmp_path / "spool"))
    assert str(raised.value) == (
        "tracking URI 'postgresql://alice@127.0.0.1:5432/track': clients reach a PostgreSQL store "
        "through its server: run `cohort server --store postgresql://alice@127.0.0.1:5432/track` "
        "and track to http://HOST:PORT")


def test_other_ranks_do_not_record(tmp_path, monkeypatch):
    monkeypatch.setenv("COHORT_RANK", "1")
    run = cohort.track.init(uri=f"sqlite:{tmp_path}/x.db")
    run.log({"loss": 1.0})
    run.finish()
    assert run.id is None and not (tmp_path / "x.db").exists()


@pytest.fixture(scope="module")
def pg_cluster():
    if not postgres_cluster.available():
        pytest.skip(f"PostgreSQL 15 is not installed ({postgres_cluster.BIN}/initdb missing): "
                    "apt-get install postgresql-15")
    cluster = postgres_cluster.PostgresCluster()  # durable (fsync on), as in production
    yield cluster
    cluster.stop()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_server_killed_while_logging_loses_and_doubles_nothing(backend, tmp_path, request):
    port = free_port()
    args = ["--port", str(port)]
    store = None if backend == "sqlite" else request.getfixturevalue("pg_cluster").new_database()
    server = TrackingServer(tmp_path, args, store=store)
    spool = tmp_path / "spool"
    run = cohort.track.init(project="kill", uri=f"http://127.0.0.1:{port}", spool_dir=str(spool),
                            flush_interval_ms=20)
    for step in range(0, 1000):
        run.log({"loss": float(step)}, step=step)
    run.flush()  # acknowledged: must survive the kill
    server.stop(signal.SIGKILL)
    for step in range(1000, 3000):
        run.log({"loss": float(step)}, step=step)
    run.flush()
    assert run.spooled_batches() > 0
    assert len(list(spool.glob("*.jsonl"))) == 1

    server = TrackingServer(tmp_path, args, store=store)  # the same store and port
    try:
        # The acknowledged points are there; the client may already be replaying
        # its spool (its heartbeat finds the server back), never twice.
        steps = [p["step"] for p in history(server, run.id, "loss")]
        assert len(steps) == len(set(steps)) and set(range(1000)) <= set(steps) <= set(range(3000))
        run.finish()  # replays the rest of the spool, then ends the run
        assert run.spooled_batches() == 0
        steps = [p["step"] for p in history(server, run.id, "loss")]
        assert steps == list(range(3000))
        assert server.get("runs/get", run_id=run.id)[1]["run"]["info"]["status"] == "FINISHED"
        assert list(spool.glob("*.jsonl")) == []
    finally:
        server.stop()


def test_spool_left_by_a_finished_run_is_replayed_by_the_next(tmp_path):
    port = free_port()
    spool = tmp_path / "spool"
    server = TrackingServer(tmp_path, ["--port", str(port)])
    uri = f"http://127.0.0.1:{port}"
    run = cohort.track.init(project="orphan", uri=uri, spool_dir=str(spool))
    server.stop(signal.SIGKILL)
    for step in range(500):
        run.log({"m": 1.0}, step=step)
    run.finish()  # the server is down: the points stay spooled
    assert len(list(spool.glob("*.jsonl"))) == 1
    server = TrackingServer(tmp_path, ["--port", str(port)])
    try:
        nxt = cohort.track.init(project="orphan", uri=uri, spool_dir=str(spool))
        nxt.finish()
        assert len(history(server, run.id, "m")) == 500
        assert server.get("runs/get", run_id=run.id)[1]["run"]["info"]["status"] == "FINISHED"
        assert list(spool.glob("*.jsonl")) == []
    finally:
        server.stop()


def test_rerun_prints_and_runs_the_recorded_command(tmp_path):
    import subprocess
    from tracking_server_fixture import COHORT
    db = f"sqlite:{tmp_path}/t.db"
    job = tmp_path / "job.py"
    job.write_text(
        "import sys, cohort.track\n"
        f"run = cohort.track.init(project='rerun', uri={db!r}, spool_dir={str(tmp_path / 'spool')!r})\n"
        "open('marker', 'a').write(sys.argv[1] + '\\n')\n"
        "run.finish()\n"
        "print(run.id)\n")
    env = dict(os.environ)
    first = subprocess.run([sys.executable, str(job), "it's"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    run_id = first.stdout.strip()
    shown = subprocess.run([COHORT, "rerun", run_id, "--uri", db], capture_output=True,
                           text=True, timeout=60, env=env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == f"cd {tmp_path} && {sys.executable} {job} 'it'\\''s'\n"
    again = subprocess.run([COHORT, "rerun", run_id, "--uri", db, "--exec"], capture_output=True,
                           text=True, timeout=60, env=env)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "marker").read_text() == "it's\nit's\n"
    missing = subprocess.run([COHORT, "rerun", "nope", "--uri", db], capture_output=True,
                             text=True, timeout=60, env=env)
    assert (missing.returncode, missing.stderr) == \
        (1, "cohort rerun: GET runs/get: RESOURCE_DOES_NOT_EXIST: Run with id=nope not found\n")


REWRITTEN_JOB = (
    "import sys, cohort.track\n"
    "run = cohort.track.init(project='rerun', uri=sys.argv[1], spool_dir=sys.argv[2])\n"
    "open('marker', 'a').write(' '.join(sys.argv[3:]) + '\\n')\n"
    "for key, value in zip(sys.argv[3::2], sys.argv[4::2]):\n"
    "    run.set_tag(key, value)\n"
    "run.finish()\n"
    "print(run.id)\n")


def test_rerun_passes_no_recorded_value_to_a_shell(tmp_path):
    """Recorded values are data: a git commit, command, directory or world
    size a shell would run something with is refused or passed as a plain
    argument, and nothing it names runs."""
    import subprocess
    from tracking_server_fixture import COHORT
    db = f"sqlite:{tmp_path}/t.db"
    spool = str(tmp_path / "spool")
    (tmp_path / "job.py").write_text(REWRITTEN_JOB)
    here = tmp_path / "d $(touch PWNED0)"  # the recorded directory
    here.mkdir()

    def record(*tags):
        out = subprocess.run([sys.executable, str(tmp_path / "job.py"), db, spool, *tags],
                             cwd=here, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    def rerun(run_id, *flags):
        return subprocess.run([COHORT, "rerun", run_id, "--uri", db, *flags], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)

    bad = [
        ("mlflow.source.git.commit", "abc; touch PWNED1",
         "the recorded git commit 'abc; touch PWNED1' (tag mlflow.source.git.commit) is not a "
         "commit hash"),
        ("cohort.command", f"{sys.executable} x.py; touch PWNED2",
         "the recorded command (tag cohort.command) is not a plain command line: unquoted ';' "
         f"at position {len(sys.executable) + 5} (cohort rerun runs it without a shell)"),
        ("cohort.world_size", "2; touch PWNED3",
         "the recorded world size '2; touch PWNED3' (tag cohort.world_size) is not a positive "
         "integer"),
        # Printed, a value must not drive the terminal either.
        ("mlflow.source.git.commit", "\x1b[2Jabc",
         "the recorded git commit '\\x1b[2Jabc' (tag mlflow.source.git.commit) is not a commit "
         "hash"),
        ("cohort.cwd", "/tmp/\x1b]0;owned\x07",
         "the recorded directory (tag cohort.cwd) holds a control character (\\x1b) at "
         "position 5"),
    ]
    for tag, value, why in bad:
        run_id = record(tag, value)
        for flags in ([], ["--exec"]):
            out = rerun(run_id, *flags)
            assert (out.returncode, out.stdout, out.stderr) == (
                1, "", f"cohort rerun: run {run_id}: {why}\n"), (tag, flags)
    # Quoted, a value is one argument however it reads to a shell: the
    # directory above, and an argument that is a command.
    run_id = record("x", "; touch PWNED4 $(touch PWNED5)")
    out = rerun(run_id)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ("cd '%s' && %s %s %s %s x '; touch PWNED4 $(touch PWNED5)'\n"
                          % (here, sys.executable, tmp_path / "job.py", db, spool))
    out = rerun(run_id, "--exec")
    assert out.returncode == 0, out.stderr
    assert (here / "marker").read_text().splitlines()[-1] == "x ; touch PWNED4 $(touch PWNED5)"
    for place in (tmp_path, here):
        assert not [p.name for p in place.iterdir() if p.name.startswith("PWNED")], place


def test_rerun_checks_out_the_recorded_commit(tmp_path):
    import subprocess
    from tracking_server_fixture import COHORT
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "job.py").write_text(REWRITTEN_JOB)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "job.py"], ["commit", "-q", "-m", "one"]):
        subprocess.run(git + args, cwd=repo, check=True, capture_output=True, timeout=30)
    first = subprocess.run(git + ["rev-parse", "HEAD"], cwd=repo, capture_output=True,
                           text=True, timeout=30).stdout.strip()
    db = f"sqlite:{tmp_path}/t.db"
    run_id = subprocess.run([sys.executable, "job.py", db, str(tmp_path / "spool")], cwd=repo,
                            capture_output=True, text=True, timeout=60).stdout.strip()
    (repo / "job.py").write_text(REWRITTEN_JOB.replace("marker", "marker2"))
    subprocess.run(git + ["commit", "-q", "-am", "two"], cwd=repo, check=True, timeout=30)
    out = subprocess.run([COHORT, "rerun", run_id, "--uri", db], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.startswith(f"cd {repo} && git checkout --detach {first} && "), out.stdout
    out = subprocess.run([COHORT, "rerun", run_id, "--uri", db, "--exec"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert (repo / "marker").read_text() == "\n\n"  # the first commit's job, twice
    assert not (repo / "marker2").exists()
    head = subprocess.run(git + ["rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                          timeout=30).stdout.strip()
    assert head == first


def test_system_metrics_from_proc(tmp_path):
    server = TrackingServer(tmp_path)
    try:
        run = cohort.track.init(project="sys", uri=server.url, spool_dir=str(tmp_path / "spool"),
                                system_metrics_s=0.05, flush_interval_ms=10)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(history(server, run.id, "system/cpu_percent")) < 3:
            run.flush()
        run.finish()
        cpu = history(server, run.id, "system/cpu_percent")
        assert len(cpu) >= 3 and [p["step"] for p in cpu[:3]] == [0, 1, 2]
        assert all(0.0 <= p["value"] <= 100.0 for p in cpu)
        memory = history(server, run.id, "system/memory_used_bytes")
        assert memory and all(p["value"] > 0 for p in memory)
        assert history(server, run.id, "system/network_receive_bytes_per_s")
    finally:
        server.stop()


def test_digits_job_records_itself_with_engine_figures(tmp_path):
    """The README's main job records itself (rank 0 of 2) and prints the
    command that serves its dashboard; cohort.torch logs each step's figures."""
    import subprocess
    from tracking_server_fixture import BUILD, COHORT
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    store = f"sqlite:{tmp_path}/t.db"
    env = dict(os.environ, COHORT_TRACKING_URI=store, COHORT_BUILD_DIR=BUILD)
    job = subprocess.run([COHORT, "run", "-np", "2", "--", sys.executable,
                          os.path.join(root, "examples", "pytorch_digits.py"), "--epochs", "1",
                          "--min-accuracy", "0"], capture_output=True, text=True, env=env,
                         timeout=150, cwd=tmp_path)
    assert job.returncode == 0, job.stderr
    line = [x for x in job.stdout.splitlines() if "tracked as run" in x]
    assert len(line) == 1, job.stdout
    run_id = line[0].split("tracked as run ")[1].split(";")[0]
    assert line[0].endswith(f"dashboard: cohort server --store {store}  (then open "
                            "http://127.0.0.1:5000)")
    server = TrackingServer(tmp_path, ["--store", store])
    try:
        run = server.get("runs/get", run_id=run_id)[1]["run"]
        tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
        assert tags["cohort.world_size"] == "2" and "cohort.torch" in tags
        assert {p["key"]: p["value"] for p in run["data"]["params"]}["epochs"] == "1"
        # 1437 training images, global batch 64: 22 steps.
        assert [p["step"] for p in history(server, run_id, "train_loss")] == list(range(22))
        assert len(history(server, run_id, "engine/allreduce_wait_s")) == 22
        # DigitsCNN's 38,282 float32 parameters are reduced every step.
        assert {p["value"] for p in history(server, run_id, "engine/bytes_reduced")} == {153128.0}
        assert len(history(server, run_id, "engine/step_time_s")) == 21
        # Fusion: every step reduces DigitsCNN's 8 gradient tensors in however
        # many allreduces the engine fused them into.
        allreduces = history(server, run_id, "engine/allreduces")
        per_op = history(server, run_id, "engine/fusion/tensors_per_allreduce")
        assert len(allreduces) == len(per_op) == 22
        assert [round(a["value"] * t["value"]) for a, t in zip(allreduces, per_op)] == [8] * 22
        assert all(0 <= p["value"] <= 1
                   for p in history(server, run_id, "engine/fusion/fused_tensor_fraction"))
        assert all(0 <= p["value"] <= 153128
                   for p in history(server, run_id, "engine/fusion/fused_bytes"))
        assert all(p["value"] >= 1 for p in history(server, run_id, "engine/cycles"))
        assert len(history(server, run_id, "test_accuracy")) == 1
    finally:
        server.stop()


def test_client_sends_its_token(tmp_path, monkeypatch):
    import subprocess
    from tracking_server_fixture import COHORT
    store = f"sqlite:{tmp_path}/tracking.db"
    subprocess.run([COHORT, "user", "add", "ci", "--store", store], check=True, timeout=30,
                   capture_output=True)
    token = subprocess.run([COHORT, "token", "create", "ci", "--store", store], check=True,
                           timeout=30, capture_output=True, text=True).stdout.strip()
    server = TrackingServer(tmp_path, ["--auth"])
    try:
        with pytest.raises(ValueError, match="UNAUTHENTICATED: This server requires a token"):
            cohort.track.init(uri=server.url, spool_dir=str(tmp_path / "spool"))
        monkeypatch.setenv("COHORT_TRACKING_TOKEN", token)
        run = cohort.track.init(project="ci-project", uri=server.url,
                                spool_dir=str(tmp_path / "spool"))
        run.log({"x": 1.0}, step=0)
        run.finish()
        headers = {"Authorization": "Bearer " + token}
        status, body = server.request("GET", "/api/2.0/mlflow/metrics/get-history",
                                      query={"run_id": run.id, "metric_key": "x"}, headers=headers)
        assert status == 200 and len(body["metrics"]) == 1
    finally:
        server.stop()


def test_datasets_a_loader_opens_are_in_the_provenance(tmp_path):
    import numpy as np
    from cohort.data import DataLoader, Writer
    data = str(tmp_path / "toy")
    w = Writer.create(data, [("x", "array", "float32"), ("label", "label")])
    for i in range(4):
        w.append({"x": np.full((2,), i, np.float32), "label": i})
    commit = w.commit("four samples")
    db = f"sqlite:{tmp_path}/t.db"
    run = cohort.track.init(project="data", uri=db, spool_dir=str(tmp_path / "spool"))
    for _ in range(2):  # the same dataset twice: noted once
        assert sum(len(b["label"]) for b in DataLoader(data, batch_size=2, rank=0, world_size=1)) == 4
    run.finish()
    server = TrackingServer(tmp_path, ["--store", db])
    try:
        tags = {t["key"]: t["value"] for t in server.get("runs/get", run_id=run.id)[1]["run"]["data"]["tags"]}
        assert tags["cohort.dataset.0"] == f"{data}@{commit}"
        assert "cohort.dataset.1" not in tags
        inputs = server.get("runs/get", run_id=run.id)[1]["run"]["inputs"]
        assert inputs == {"dataset_inputs": [{"dataset": {
            "name": "toy", "digest": commit[:36], "source_type": "cohort.data",
            "source": f"{data}@{commit}"}}]}
    finally:
        server.stop()


def test_log_input_over_http_with_context(tmp_path):
    server = TrackingServer(tmp_path)
    try:
        run = cohort.track.init(project="inputs", uri=server.url, spool_dir=str(tmp_path / "spool"))
        run.log_input("digits", "abc123", "/data/digits", context="train")
        run.log_input("digits", "abc123", "/data/digits", context="train")  # once
        run.finish()
        inputs = server.get("runs/get", run_id=run.id)[1]["run"]["inputs"]
        assert inputs == {"dataset_inputs": [{
            "dataset": {"name": "digits", "digest": "abc123", "source_type": "local",
                        "source": "/data/digits"},
            "tags": [{"key": "mlflow.data.context", "value": "train"}]}]}
    finally:
        server.stop()


class _WrongAnswers:
    """An HTTP server on loopback that answers experiments/* as MLflow does
    and runs/create with `answer` (status 200): a broken or hostile server."""

    def __init__(self, answer):
        import http.server
        import json
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def _reply(self):
                if "experiments/" in self.path:
                    body = json.dumps({"experiment": {"experiment_id": "1"}}).encode()
                else:
                    body = answer
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._reply()

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self._reply()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("answer", [b"{}", b'{"run": {"info": {"run_id": 7}}}', b"[1, 2]",
                                    b'"run"'])
def test_a_wrong_answer_to_runs_create_is_an_error_not_a_crash(tmp_path, answer):
    server = _WrongAnswers(answer)
    try:
        with pytest.raises(Exception, match="answer has no /run/info/run_id"):
            cohort.track.init(project="p", name="n", uri=server.url,
                              spool_dir=str(tmp_path / "spool"))
    finally:
        server.stop()
