"""Contract tests of `cohort server`'s MLflow REST API 2.0: each endpoint as
MLflow's client sends it (field names and types from MLflow's service.proto
and mlflow_artifacts.proto), success and error answers, plus HTTP-level
faults. The real MLflow client cannot be installed here. Every test taking
the `server` fixture runs against both stores: SQLite and a throw-away
PostgreSQL 15 cluster (postgres_cluster.py), one cluster for the module."""
import http.client
import os
import socket
import time

import pytest

import postgres_cluster
from tracking_server_fixture import TrackingServer, raw_exchange

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="module")
def pg_cluster():
    if not postgres_cluster.available():
        pytest.skip(f"PostgreSQL 15 is not installed ({postgres_cluster.BIN}/initdb missing): "
                    "apt-get install postgresql-15")
    cluster = postgres_cluster.PostgresCluster(fsync=False)  # the tests kill servers, not PostgreSQL
    yield cluster
    cluster.stop()


def store_for(backend, tmp_path, request):
    """A fresh store URI of this backend."""
    if backend == "sqlite":
        return f"sqlite:{tmp_path}/tracking.db"
    return request.getfixturevalue("pg_cluster").new_database()


@pytest.fixture(scope="module", params=BACKENDS)
def server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("track")
    s = TrackingServer(tmp, store=store_for(request.param, tmp, request))
    yield s
    s.stop()


def error(answer):
    status, body = answer
    return status, body["error_code"], body["message"]


def new_run(server, experiment_id="0", **fields):
    status, body = server.post("runs/create", {"experiment_id": experiment_id,
                                               "start_time": int(time.time() * 1000), **fields})
    assert status == 200, body
    return body["run"]["info"]["run_id"]


def test_experiments_lifecycle(server):
    status, body = server.post("experiments/create",
                               {"name": "exp-a", "tags": [{"key": "team", "value": "vision"}]})
    assert status == 200
    eid = body["experiment_id"]
    assert isinstance(eid, str)
    status, body = server.get("experiments/get", experiment_id=eid)
    assert status == 200
    e = body["experiment"]
    assert (e["name"], e["lifecycle_stage"], e["artifact_location"]) == \
        ("exp-a", "active", f"mlflow-artifacts:/{eid}")
    assert e["tags"] == [{"key": "team", "value": "vision"}]
    assert isinstance(e["creation_time"], int) and isinstance(e["last_update_time"], int)
    assert server.get("experiments/get-by-name", experiment_name="exp-a")[1]["experiment"]["experiment_id"] == eid

    assert error(server.post("experiments/create", {"name": "exp-a"})) == \
        (400, "RESOURCE_ALREADY_EXISTS", "Experiment(name=exp-a) already exists.")
    assert error(server.get("experiments/get", experiment_id="9999")) == \
        (404, "RESOURCE_DOES_NOT_EXIST", "No Experiment with id=9999 exists")
    assert error(server.get("experiments/get-by-name", experiment_name="nope")) == \
        (404, "RESOURCE_DOES_NOT_EXIST", "Could not find experiment with name 'nope'")

    assert server.post("experiments/update", {"experiment_id": eid, "new_name": "exp-b"}) == (200, {})
    assert server.post("experiments/set-experiment-tag",
                       {"experiment_id": eid, "key": "k", "value": "v"}) == (200, {})
    status, body = server.post("experiments/search", {"filter": "name = 'exp-b'"})
    assert [x["name"] for x in body["experiments"]] == ["exp-b"]
    status, body = server.post("experiments/search", {"filter": "tags.k = 'v'"})
    assert [x["experiment_id"] for x in body["experiments"]] == [eid]

    assert server.post("experiments/delete", {"experiment_id": eid}) == (200, {})
    assert server.get("experiments/get", experiment_id=eid)[1]["experiment"]["lifecycle_stage"] == "deleted"
    status, body = server.post("experiments/search", {"view_type": "DELETED_ONLY"})
    assert [x["experiment_id"] for x in body["experiments"]] == [eid]
    assert error(server.post("runs/create", {"experiment_id": eid}))[:2] == (400, "INVALID_PARAMETER_VALUE")
    assert server.post("experiments/restore", {"experiment_id": eid}) == (200, {})


def test_experiment_search_pages(server):
    for i in range(5):
        assert server.post("experiments/create", {"name": f"page-{i}"})[0] == 200
    names, token = [], None
    while True:
        body = {"max_results": 2, "filter": "name LIKE 'page-%'", "order_by": ["name ASC"]}
        if token:
            body["page_token"] = token
        status, page = server.post("experiments/search", body)
        assert status == 200
        names += [e["name"] for e in page["experiments"]]
        token = page.get("next_page_token")
        if not token:
            break
    assert names == [f"page-{i}" for i in range(5)]
    # GET form with repeated query keys, as the client sends it.
    status, page = server.get("experiments/search", max_results="3", filter="name LIKE 'page-%'")
    assert status == 200 and len(page["experiments"]) == 3


def test_run_logging_and_get(server):
    rid = new_run(server, run_name="train-1", user_id="alice",
                  tags=[{"key": "mlflow.source.name", "value": "train.py"}])
    assert server.post("runs/log-metric", {"run_id": rid, "key": "loss", "value": 0.5,
                                           "timestamp": 1000, "step": 1}) == (200, {})
    # proto3 JSON: int64 as a string, NaN as a string.
    assert server.post("runs/log-metric", {"run_id": rid, "key": "loss", "value": "0.25",
                                           "timestamp": "1001", "step": "2"}) == (200, {})
    assert server.post("runs/log-metric", {"run_uuid": rid, "key": "nan", "value": "NaN",
                                           "timestamp": 5}) == (200, {})
    assert server.post("runs/log-parameter", {"run_id": rid, "key": "lr", "value": "0.1"}) == (200, {})
    assert server.post("runs/set-tag", {"run_id": rid, "key": "phase", "value": "x"}) == (200, {})
    assert server.post("runs/log-batch", {
        "run_id": rid,
        "metrics": [{"key": "acc", "value": v / 10, "timestamp": 2000 + v, "step": v} for v in range(5)],
        "params": [{"key": "batch", "value": "32"}],
        "tags": [{"key": "phase", "value": "eval"}]}) == (200, {})
    status, body = server.get("runs/get", run_id=rid)
    assert status == 200
    info, data = body["run"]["info"], body["run"]["data"]
    assert (info["run_id"], info["run_uuid"], info["run_name"], info["user_id"], info["status"],
            info["experiment_id"], info["lifecycle_stage"]) == \
        (rid, rid, "train-1", "alice", "RUNNING", "0", "active")
    assert info["artifact_uri"] == f"mlflow-artifacts:/0/{rid}/artifacts"
    metrics = {m["key"]: m for m in data["metrics"]}
    assert metrics["loss"] == {"key": "loss", "value": 0.25, "timestamp": 1001, "step": 2}
    assert metrics["acc"]["value"] == 0.4 and metrics["acc"]["step"] == 4
    assert metrics["nan"]["value"] == "NaN"
    assert {p["key"]: p["value"] for p in data["params"]} == {"lr": "0.1", "batch": "32"}
    tags = {t["key"]: t["value"] for t in data["tags"]}
    assert tags["phase"] == "eval" and tags["mlflow.runName"] == "train-1"

    status, body = server.get("metrics/get-history", run_id=rid, metric_key="acc")
    assert [m["step"] for m in body["metrics"]] == [0, 1, 2, 3, 4]
    assert body["metrics"][2] == {"key": "acc", "value": 0.2, "timestamp": 2002, "step": 2}

    assert server.post("runs/delete-tag", {"run_id": rid, "key": "phase"}) == (200, {})
    assert error(server.post("runs/delete-tag", {"run_id": rid, "key": "phase"}))[:2] == \
        (404, "RESOURCE_DOES_NOT_EXIST")
    status, body = server.post("runs/update", {"run_id": rid, "status": "FINISHED",
                                               "end_time": 5000, "run_name": "renamed"})
    assert status == 200
    assert (body["run_info"]["status"], body["run_info"]["end_time"], body["run_info"]["run_name"]) == \
        ("FINISHED", 5000, "renamed")
    assert server.post("runs/delete", {"run_id": rid}) == (200, {})
    assert server.get("runs/get", run_id=rid)[1]["run"]["info"]["lifecycle_stage"] == "deleted"
    assert error(server.post("runs/log-metric", {"run_id": rid, "key": "x", "value": 1,
                                                 "timestamp": 1})) == \
        (400, "INVALID_PARAMETER_VALUE",
         f"The run {rid} must be in the 'active' state. Current state is deleted.")
    assert server.post("runs/restore", {"run_id": rid}) == (200, {})


def test_search_runs_filter_order_pages(server):
    status, body = server.post("experiments/create", {"name": "search-runs"})
    eid = body["experiment_id"]
    for i in range(6):
        rid = new_run(server, eid, run_name=f"s{i}")
        server.post("runs/log-batch", {"run_id": rid,
                                       "metrics": [{"key": "loss", "value": 10 - i, "timestamp": 1}],
                                       "params": [{"key": "opt", "value": "adam" if i % 2 else "sgd"}]})
    status, body = server.post("runs/search", {
        "experiment_ids": [eid], "filter": "params.opt = 'adam' and metrics.loss <= 7",
        "order_by": ["metrics.loss DESC"]})
    assert status == 200
    assert [r["info"]["run_name"] for r in body["runs"]] == ["s3", "s5"]
    names, token = [], ""
    while True:
        status, body = server.post("runs/search", {"experiment_ids": [eid], "max_results": 4,
                                                   "order_by": ["attributes.run_name"],
                                                   "page_token": token})
        names += [r["info"]["run_name"] for r in body.get("runs", [])]
        token = body.get("next_page_token")
        if not token:
            break
    assert names == [f"s{i}" for i in range(6)]
    assert server.post("runs/search", {"experiment_ids": [eid], "filter": "metrics.loss > 100"}) == (200, {})
    assert error(server.post("runs/search", {"experiment_ids": [eid], "filter": "metrics.loss ~ 1"}))[:2] == \
        (400, "INVALID_PARAMETER_VALUE")
    assert error(server.post("runs/search", {"experiment_ids": [eid], "order_by": ["bogus.x"]})) == \
        (400, "INVALID_PARAMETER_VALUE", "Invalid order_by clause 'bogus.x'")
    assert error(server.post("runs/search", {"max_results": 50001}))[2] == \
        "Invalid value 50001 for parameter 'max_results' supplied: it must be between 1 and 50000"


def test_bad_input_is_4xx_naming_the_field(server):
    rid = new_run(server)
    assert error(server.request("POST", "/api/2.0/mlflow/runs/log-metric", raw=b"{not json")) [:2] == \
        (400, "BAD_REQUEST")
    assert error(server.request("POST", "/api/2.0/mlflow/runs/log-metric", raw=b"[1, 2]")) == \
        (400, "BAD_REQUEST", "Malformed JSON request body: expected an object, got array")
    assert error(server.post("runs/log-metric", {"run_id": rid, "key": "k", "value": "abc",
                                                 "timestamp": 1})) == \
        (400, "INVALID_PARAMETER_VALUE",
         "Invalid value \"abc\" for parameter 'value' supplied: expected a number")
    assert error(server.post("runs/log-metric", {"run_id": rid, "key": "k", "value": 1})) == \
        (400, "INVALID_PARAMETER_VALUE",
         "Missing value for required parameter 'timestamp'. See the API docs for more "
         "information about request parameters.")
    assert error(server.post("runs/log-metric", {"run_id": 12, "key": "k", "value": 1,
                                                 "timestamp": 1}))[2] == \
        "Invalid value 12 for parameter 'run_id' supplied: expected a string"
    assert error(server.post("runs/log-batch", {"run_id": rid, "metrics": [
        {"key": "ok", "value": 1, "timestamp": 1}, {"key": "k", "value": [], "timestamp": 1}]}))[2] == \
        "Invalid value [] for parameter 'metrics[1].value' supplied: expected a number"
    assert error(server.post("runs/log-batch", {"run_id": rid, "metrics": [
        {"key": "m", "value": 1, "timestamp": 1}] * 1001})) == \
        (400, "INVALID_PARAMETER_VALUE",
         "A batch logging request can contain at most 1000 metrics. Got 1001 metrics. "
         "Please split up metrics across multiple requests and try again.")
    assert error(server.post("runs/log-batch", {"run_id": rid, "params": [
        {"key": f"p{i}", "value": "v"} for i in range(101)]}))[2].startswith(
        "A batch logging request can contain at most 100 params.")
    assert error(server.post("runs/log-parameter", {"run_id": "no-such-run", "key": "a", "value": "b"})) == \
        (404, "RESOURCE_DOES_NOT_EXIST", "Run with id=no-such-run not found")
    big = "k" * (10 << 20)
    status, code, message = error(server.post("runs/log-metric", {"run_id": rid, "key": big,
                                                                  "value": 1, "timestamp": 1}))
    assert (status, code) == (400, "INVALID_PARAMETER_VALUE")
    assert "for parameter 'metrics[0].key' supplied: length 10485760 exceeds the limit of 250" in message
    assert server.post("runs/log-parameter", {"run_id": rid, "key": "p", "value": "1"}) == (200, {})
    assert error(server.post("runs/log-parameter", {"run_id": rid, "key": "p", "value": "2"}))[2] == \
        ("Changing param values is not allowed. Params were already logged='[{key: 'p', "
         f"old_value: '1', new_value: '2'}}]' for run ID='{rid}'.")
    assert error(server.get("no/such-endpoint")) == \
        (404, "ENDPOINT_NOT_FOUND", "No API endpoint at /api/2.0/mlflow/no/such-endpoint")
    assert error(server.request("GET", "/api/2.0/mlflow/runs/log-metric")) == \
        (405, "BAD_REQUEST", "Method GET is not allowed for /api/2.0/mlflow/runs/log-metric")
    assert error(server.post("runs/update", {"run_id": rid, "status": "DONE"}))[2] == \
        ("Invalid value 'DONE' for parameter 'status' supplied: expected RUNNING, SCHEDULED, "
         "FINISHED, FAILED or KILLED")


def test_sql_metacharacters_are_data(server):
    evil = "x'); DROP TABLE runs; --\"`%_\\"
    status, body = server.post("experiments/create", {"name": evil})
    assert status == 200
    eid = body["experiment_id"]
    assert server.get("experiments/get-by-name", experiment_name=evil)[1]["experiment"]["name"] == evil
    rid = new_run(server, eid, run_name=evil, user_id=evil, tags=[{"key": "t", "value": evil}])
    assert server.post("runs/log-batch", {"run_id": rid,
                                          "metrics": [{"key": "m'--", "value": 1, "timestamp": 1}],
                                          "params": [{"key": "p;", "value": evil}],
                                          "tags": [{"key": "k\"", "value": evil}]}) == (200, {})
    run = server.get("runs/get", run_id=rid)[1]["run"]
    assert run["info"]["run_name"] == evil and run["info"]["user_id"] == evil
    assert {p["key"]: p["value"] for p in run["data"]["params"]} == {"p;": evil}
    status, body = server.post("runs/search", {"experiment_ids": [eid],
                                               "filter": "params.`p;` = 'x''); DROP'"})
    assert status in (200, 400)  # a filter string is parsed, never pasted into SQL
    status, body = server.post("runs/search", {"experiment_ids": [eid], "filter": f"tags.t = \"{evil.replace(chr(34), '')}\""})
    assert status == 200
    assert server.get("runs/get", run_id=evil)[0] == 404
    assert server.get("runs/get", run_id=rid)[0] == 200  # the runs table is still there


def test_bulk_interval_downsamples(server):
    rid = new_run(server)
    for chunk in range(5):
        server.post("runs/log-batch", {"run_id": rid, "metrics": [
            {"key": "loss", "value": 99.0 if s == 2345 else 1.0, "timestamp": s, "step": s}
            for s in range(chunk * 1000, chunk * 1000 + 1000)]})
    status, body = server.get("metrics/get-history-bulk-interval", run_ids=[rid],
                              metric_key="loss", max_results="100")
    assert status == 200
    points = body["metrics"]
    assert len(points) <= 100
    assert points[0]["step"] == 0 and points[-1]["step"] == 4999
    assert all(p["run_id"] == rid for p in points)
    assert any(p["step"] == 2345 and p["value"] == 99.0 for p in points)
    status, body = server.get("metrics/get-history-bulk-interval", run_ids=[rid],
                              metric_key="loss", start_step="10", end_step="14")
    assert [p["step"] for p in body["metrics"]] == [10, 11, 12, 13, 14]
    assert error(server.get("metrics/get-history-bulk-interval", run_ids=[rid],
                            metric_key="loss", start_step="10"))[2] == \
        "If either start step or end step are specified, both must be specified."
    assert error(server.get("metrics/get-history-bulk-interval", run_ids=["r"] * 101,
                            metric_key="loss"))[2] == \
        "GetMetricHistoryBulkInterval request must specify at most 100 run_ids. Received 101 run_ids."


def test_ajax_prefix(server):
    status, body = server.get("experiments/get", prefix="/ajax-api/2.0/mlflow/", experiment_id="0")
    assert status == 200 and body["experiment"]["name"] == "Default"


def test_artifacts_proxy(server):
    base = "/api/2.0/mlflow-artifacts/artifacts"
    assert server.request("PUT", base + "/0/run1/artifacts/model/weights.bin", raw=b"\x00\x01abc") == (200, {})
    assert server.request("PUT", base + "/0/run1/artifacts/notes.txt", raw=b"hello") == (200, {})
    assert server.request("GET", base + "/0/run1/artifacts/model/weights.bin") == (200, b"\x00\x01abc")
    status, body = server.request("GET", base, query={"path": "0/run1/artifacts"})
    assert status == 200
    assert body["files"] == [{"path": "model", "is_dir": True},
                             {"path": "notes.txt", "is_dir": False, "file_size": 5}]
    assert error(server.request("GET", base + "/0/run1/artifacts/missing"))[:2] == (404, "RESOURCE_DOES_NOT_EXIST")
    assert error(server.request("PUT", base + "/0/../../etc/passwd", raw=b"x")) == \
        (400, "INVALID_PARAMETER_VALUE", "Invalid artifact path '0/../../etc/passwd'")
    assert error(server.request("GET", base, query={"path": "../x"}))[:2] == (400, "INVALID_PARAMETER_VALUE")
    # DELETE takes a file or a whole folder; deleting again is no error.
    assert server.request("DELETE", base + "/0/run1/artifacts/notes.txt") == (200, {})
    assert error(server.request("GET", base + "/0/run1/artifacts/notes.txt"))[:2] == (404, "RESOURCE_DOES_NOT_EXIST")
    assert server.request("DELETE", base + "/0/run1/artifacts/model") == (200, {})
    assert server.request("DELETE", base + "/0/run1/artifacts/model") == (200, {})
    assert error(server.request("GET", base + "/0/run1/artifacts/model/weights.bin"))[:2] == \
        (404, "RESOURCE_DOES_NOT_EXIST")
    assert error(server.request("DELETE", base + "/0/../x"))[:2] == (400, "INVALID_PARAMETER_VALUE")


def test_http_garbage_and_keep_alive(server):
    assert raw_exchange(server.port, b"\x00\xff garbage\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert raw_exchange(server.port, b"GET / HTTP/9.9\r\n\r\n").startswith(b"HTTP/1.1 505")
    assert raw_exchange(server.port, b"GET /health HTTP/1.1\r\nHost: x\r\n" +
                        b"X: " + b"a" * (100 << 10) + b"\r\n\r\n").startswith(b"HTTP/1.1 431")
    json_post = b"Host: 127.0.0.1\r\nContent-Type: application/json\r\n"
    assert raw_exchange(server.port, b"POST /api/2.0/mlflow/runs/create HTTP/1.1\r\n" + json_post +
                        b"Content-Length: 999999999999\r\n\r\n").startswith(b"HTTP/1.1 413")
    assert raw_exchange(server.port, b"POST /x HTTP/1.1\r\n" + json_post +
                        b"Content-Length: -1\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert raw_exchange(server.port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        b"Content-Length: 10\r\n\r\nab") == b""
    # Chunked bodies, as some clients send them.
    answer = raw_exchange(server.port, b"POST /api/2.0/mlflow/experiments/create HTTP/1.1\r\n" +
                          json_post + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                          b"5\r\n{\"nam\r\n10\r\ne\": \"chunked-x\"}\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200") and b"experiment_id" in answer
    # Keep-alive: several requests on one connection.
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    for _ in range(3):
        conn.request("GET", "/health")
        resp = conn.getresponse()
        assert (resp.status, resp.read()) == (200, b"OK")
    conn.close()
    assert server.request("GET", "/health") == (200, b"OK")
    assert server.proc.poll() is None


def test_static_files_and_404(tmp_path):
    web = tmp_path / "web"
    web.mkdir()
    (web / "index.html").write_text("<html>dash</html>")
    (tmp_path / "secret.txt").write_text("no")
    s = TrackingServer(tmp_path, ["--web-dir", str(web)])
    try:
        assert s.request("GET", "/") == (200, b"<html>dash</html>")
        assert s.request("GET", "/../secret.txt")[0] == 404
        assert s.request("GET", "/%2e%2e/secret.txt")[0] == 404
        assert s.request("GET", "/missing.js") == (404, b"404 not found: /missing.js\n")
    finally:
        s.stop()


def test_second_server_on_one_store_is_refused(server, tmp_path):
    import subprocess
    from tracking_server_fixture import COHORT
    proc = subprocess.run([COHORT, "server", "--store", server.store, "--port", "0"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    if server.store.startswith("sqlite:"):
        db = server.store[len("sqlite:"):]
        with open(f"/proc/{server.proc.pid}/cmdline", "rb") as f:
            holder = f.read().rstrip(b"\0").replace(b"\0", b" ").decode()
        assert proc.stderr == (f"cohort server: tracking store {db} is open in another process: "
                               f"pid {server.proc.pid} ({holder}) holds it as "
                               f"{os.path.realpath(db)}; use that server, or another --store\n")
    else:
        shown = server.store.replace(":" + postgres_cluster.PASSWORD + "@", "@")
        assert proc.stderr == (f"cohort server: tracking store {shown} is open in another cohort "
                               f"server (it holds PostgreSQL advisory lock {0x636f686f7274}); use "
                               "that server, or another --store\n")


def test_batch_id_makes_log_batch_idempotent(server):
    rid = new_run(server)
    batch = {"run_id": rid, "cohort_batch_id": "client-x:0",
             "metrics": [{"key": "m", "value": 1, "timestamp": 1, "step": s} for s in range(3)]}
    assert server.post("runs/log-batch", batch) == (200, {})
    batch["metrics"].append({"key": "m", "value": 1, "timestamp": 1, "step": 3})
    assert server.post("runs/log-batch", batch) == (200, {})  # a replay: skipped whole
    status, body = server.get("metrics/get-history", run_id=rid, metric_key="m")
    assert [m["step"] for m in body["metrics"]] == [0, 1, 2]


@pytest.mark.parametrize("backend", BACKENDS)
def test_auth_requires_a_users_token(backend, tmp_path, request):
    import subprocess
    from tracking_server_fixture import COHORT
    store = store_for(backend, tmp_path, request)

    def cli(*args):
        p = subprocess.run([COHORT, *args, "--store", store], capture_output=True, text=True,
                           timeout=30)
        return p.returncode, p.stdout, p.stderr

    assert cli("user", "add", "alice") == (0, "added user alice\n", "")
    assert cli("user", "add", "alice") == (1, "", "cohort user: User 'alice' already exists.\n")
    assert cli("token", "create", "bob") == (1, "", "cohort token: User 'bob' does not exist.\n")
    rc, token, _ = cli("token", "create", "alice")
    token = token.strip()
    assert rc == 0 and token.startswith("cohort_") and len(token) == 7 + 64

    s = TrackingServer(tmp_path, ["--auth"], store=store)
    try:
        assert error(s.get("experiments/get", experiment_id="0")) == \
            (401, "UNAUTHENTICATED", "This server requires a token: send 'Authorization: Bearer "
             "TOKEN' (tokens come from `cohort token create USER`)")
        assert error(s.request("GET", "/api/2.0/mlflow/experiments/get", query={"experiment_id": "0"},
                               headers={"Authorization": "Bearer cohort_wrong"})) == \
            (401, "UNAUTHENTICATED", "Invalid token")
        assert error(s.request("PUT", "/api/2.0/mlflow-artifacts/artifacts/x", raw=b"x"))[:2] == \
            (401, "UNAUTHENTICATED")
        auth = {"Authorization": "Bearer " + token}
        assert error(s.request("GET", "/api/2.0/mlflow/experiments/get",
                               query={"experiment_id": "0"}, headers=auth)) == \
            (403, "PERMISSION_DENIED", "User 'alice' may not read experiment 0")
        status, body = s.request("POST", "/api/2.0/mlflow/experiments/create",
                                 body={"name": "mine"}, headers=auth)
        assert status == 200  # its creator may edit it
        status, body = s.request("GET", "/api/2.0/mlflow/experiments/get",
                                 query={"experiment_id": body["experiment_id"]}, headers=auth)
        assert status == 200 and body["experiment"]["name"] == "mine"
        assert s.request("GET", "/health") == (200, b"OK")
    finally:
        s.stop()


def users_with_tokens(store):
    """alice and bob as users of `store`, and their tokens; and a function
    running `cohort ARGS --store store` that returns its stdout."""
    import subprocess
    from tracking_server_fixture import COHORT

    def cli(*args):
        p = subprocess.run([COHORT, *args, "--store", store], capture_output=True, text=True,
                           timeout=30)
        assert p.returncode == 0, p.stderr
        return p.stdout

    tokens = {}
    for user in ("alice", "bob"):
        cli("user", "add", user)
        tokens[user] = cli("token", "create", user).strip()
    return tokens, cli


@pytest.mark.parametrize("backend", BACKENDS)
def test_auth_experiments_are_readable_and_writable_by_named_users(backend, tmp_path, request):
    store = store_for(backend, tmp_path, request)
    tokens, cli = users_with_tokens(store)

    def as_user(server, user, method, endpoint, body=None, query=None):
        return server.request(method, "/api/2.0/mlflow/" + endpoint, body=body, query=query,
                              headers={"Authorization": "Bearer " + tokens[user]})

    s = TrackingServer(tmp_path, ["--auth"], store=store)
    try:
        status, body = as_user(s, "alice", "POST", "experiments/create", {"name": "alice-exp"})
        assert status == 200
        eid = body["experiment_id"]
        status, body = as_user(s, "alice", "POST", "runs/create", {"experiment_id": eid})
        assert status == 200
        rid = body["run"]["info"]["run_id"]
        assert error(as_user(s, "bob", "GET", "experiments/get", query={"experiment_id": eid})) == \
            (403, "PERMISSION_DENIED", f"User 'bob' may not read experiment {eid}")
        assert error(as_user(s, "bob", "GET", "runs/get", query={"run_id": rid}))[:2] == \
            (403, "PERMISSION_DENIED")
        assert error(as_user(s, "bob", "POST", "runs/search", {"experiment_ids": [eid]}))[:2] == \
            (403, "PERMISSION_DENIED")
        assert error(as_user(s, "bob", "POST", "runs/create", {}))[:2] == (403, "PERMISSION_DENIED")
        # The dashboard's run counts: an experiment's reader only, and experiment_ids needed.
        assert error(as_user(s, "bob", "GET", "experiments/activity", query={"experiment_ids": [eid]})) == \
            (403, "PERMISSION_DENIED", f"User 'bob' may not read experiment {eid}")
        assert error(as_user(s, "bob", "GET", "experiments/activity")) == \
            (403, "PERMISSION_DENIED", "Under --auth experiments/activity needs experiment_ids")
        status, body = as_user(s, "alice", "GET", "experiments/activity", query={"experiment_ids": [eid]})
        assert status == 200 and [(a["experiment_id"], a["runs"], a["running"]) for a in body["experiments"]] == \
            [(eid, 1, 1)]
        status, body = as_user(s, "bob", "POST", "experiments/search", {})
        assert status == 200 and body["experiments"] == []
        status, body = as_user(s, "alice", "POST", "experiments/search", {})
        assert [e["name"] for e in body["experiments"]] == ["alice-exp"]
    finally:
        s.stop()
    assert cli("user", "grant", "bob", "alice-exp", "read") == "bob may read experiment alice-exp\n"
    s = TrackingServer(tmp_path, ["--auth"], store=store)
    try:
        assert as_user(s, "bob", "GET", "runs/get", query={"run_id": rid})[0] == 200
        assert error(as_user(s, "bob", "POST", "runs/log-metric",
                             {"run_id": rid, "key": "m", "value": 1, "timestamp": 1})) == \
            (403, "PERMISSION_DENIED", f"User 'bob' may not edit experiment {eid}")
        assert as_user(s, "alice", "POST", "runs/log-metric",
                       {"run_id": rid, "key": "m", "value": 1, "timestamp": 1}) == (200, {})
    finally:
        s.stop()


def test_log_inputs_are_returned_by_runs_get(server):
    rid = new_run(server)
    train = {"name": "digits", "digest": "c0ffee12", "source_type": "cohort",
             "source": "/data/digits@c0ffee12", "schema": '{"x": "float32[64]"}'}
    body = {"run_id": rid, "datasets": [
        {"tags": [{"key": "mlflow.data.context", "value": "train"}], "dataset": train},
        {"dataset": {"name": "digits-eval", "digest": "0d15ea5e", "source_type": "local",
                     "source": "/data/eval", "profile": '{"rows": 360}'}}]}
    assert server.post("runs/log-inputs", body) == (200, {})
    # The same input again is skipped whole (its new tag too), as MLflow does.
    again = {"run_id": rid, "datasets": [{"tags": [{"key": "extra", "value": "x"}],
                                          "dataset": train}]}
    assert server.post("runs/log-inputs", again) == (200, {})
    status, got = server.get("runs/get", run_id=rid)
    assert status == 200
    assert got["run"]["inputs"] == {"dataset_inputs": [
        {"dataset": train, "tags": [{"key": "mlflow.data.context", "value": "train"}]},
        {"dataset": {"name": "digits-eval", "digest": "0d15ea5e", "source_type": "local",
                     "source": "/data/eval", "profile": '{"rows": 360}'}}]}
    status, found = server.post("runs/search", {"experiment_ids": ["0"],
                                                "filter": f"attributes.run_id = '{rid}'"})
    assert found["runs"][0]["inputs"] == got["run"]["inputs"]
    assert error(server.post("runs/log-inputs", {"run_id": rid, "datasets": [
        {"dataset": {**train, "digest": "d" * 37}}]})) == \
        (400, "INVALID_PARAMETER_VALUE",
         f"Invalid value '{'d' * 37}' for parameter 'datasets[0].dataset.digest' supplied: "
         "length 37 exceeds the limit of 36")
    assert error(server.post("runs/log-inputs", {"run_id": rid, "datasets": [
        {"dataset": {"name": "x", "digest": "y", "source_type": "z"}}]})) == \
        (400, "INVALID_PARAMETER_VALUE", "Missing value for required parameter "
         "'datasets[0].dataset.source'. See the API docs for more information about request "
         "parameters.")
    assert error(server.post("runs/log-inputs", {"run_id": rid, "datasets": [{"tags": []}]})) == \
        (400, "INVALID_PARAMETER_VALUE", "Missing value for required parameter "
         "'datasets[0].dataset'. See the API docs for more information about request parameters.")
    assert error(server.post("runs/log-inputs", {"run_id": rid, "datasets": [
        {"dataset": train, "tags": [{"key": "k", "value": "v" * 501}]}]}))[:2] == \
        (400, "INVALID_PARAMETER_VALUE")
    assert error(server.post("runs/log-inputs", {"run_id": "nope", "datasets": []})) == \
        (404, "RESOURCE_DOES_NOT_EXIST", "Run with id=nope not found")


JOURNAL = "/api/cohort/sweeps/journal/"


def test_sweep_journal_appends_reads_and_refuses_a_taken_seq(server):
    status, body = server.post("experiments/create", {"name": "sweep-journal-exp"})
    assert status == 200
    eid = body["experiment_id"]

    def append(seq, record, sweep="s1"):
        return server.post("append", {"experiment_id": eid, "sweep": sweep, "seq": seq,
                                      "record": record}, prefix=JOURNAL)

    def records(sweep="s1"):
        return server.get("records", prefix=JOURNAL, experiment_id=eid, sweep=sweep)

    assert records() == (200, {"records": []})
    lines = ['{"op":"start","fingerprint":"7"}'] + [f'{{"op":"ask","trial":{i}}}' for i in range(11)]
    for seq, line in enumerate(lines):
        assert append(seq, line) == (200, {})
    assert append(0, '{"op":"other-sweep"}', sweep="s2") == (200, {})
    assert records() == (200, {"records": lines})  # seq order, 10 after 9
    assert records("s2") == (200, {"records": ['{"op":"other-sweep"}']})
    # A second controller (its seq is taken): refused, the record kept.
    assert error(append(11, '{"op":"ask","trial":99}')) == \
        (400, "RESOURCE_ALREADY_EXISTS", f"Sweep 's1' of experiment {eid} already has record 11:"
         " another controller is running this sweep")
    assert records()[1]["records"][11] == lines[11]
    assert error(append(20, "{}")) == \
        (400, "INVALID_PARAMETER_VALUE", "Invalid value 20 for parameter 'seq' supplied: sweep "
         "'s1' has 12 records, so the next is 12")


def test_sweep_journal_bad_input_is_4xx_naming_the_field(server):
    status, body = server.post("experiments/create", {"name": "sweep-journal-bad"})
    eid = body["experiment_id"]
    good = {"experiment_id": eid, "sweep": "s", "seq": 0, "record": "{}"}
    for field in ("experiment_id", "sweep", "seq", "record"):
        body = {k: v for k, v in good.items() if k != field}
        assert error(server.post("append", body, prefix=JOURNAL)) == \
            (400, "INVALID_PARAMETER_VALUE", f"Missing value for required parameter '{field}'. See "
             "the API docs for more information about request parameters.")
    status, body = server.post("append", {**good, "seq": "zero"}, prefix=JOURNAL)
    assert status == 400 and body["error_code"] == "INVALID_PARAMETER_VALUE" and "'seq'" in body["message"]
    assert error(server.post("append", {**good, "seq": -3}, prefix=JOURNAL)) == \
        (400, "INVALID_PARAMETER_VALUE", "Invalid value -3 for parameter 'seq' supplied: it must be "
         "0 or more")
    assert error(server.post("append", {**good, "record": "a\nb"}, prefix=JOURNAL)) == \
        (400, "INVALID_PARAMETER_VALUE", "Invalid value for parameter 'record' supplied: it must be"
         " one line of 1 to 1048576 bytes")
    assert error(server.post("append", {**good, "sweep": "x" * 251}, prefix=JOURNAL)) == \
        (400, "INVALID_PARAMETER_VALUE", "Parameter 'sweep' is 251 bytes; at most 250")
    assert error(server.post("append", {**good, "experiment_id": "987654"}, prefix=JOURNAL)) == \
        (404, "RESOURCE_DOES_NOT_EXIST", "No Experiment with id=987654 exists")
    assert error(server.get("records", prefix=JOURNAL, experiment_id="x'; DROP TABLE runs;--",
                            sweep="s"))[:2] == (404, "RESOURCE_DOES_NOT_EXIST")
    assert error(server.get("append", prefix=JOURNAL, **good)) == \
        (405, "BAD_REQUEST", f"Method GET is not allowed for {JOURNAL}append")
    assert error(server.get("nothing", prefix=JOURNAL)) == \
        (404, "ENDPOINT_NOT_FOUND", f"No API endpoint at {JOURNAL}nothing")
    status, body = server.request("POST", JOURNAL + "append", raw=b"{not json",
                                  headers={"Content-Type": "application/json"})
    assert status == 400 and body["error_code"] == "BAD_REQUEST"
    status, body = server.request("POST", JOURNAL + "append", raw=b"[1, 2]",
                                  headers={"Content-Type": "application/json"})
    assert status == 400 and body["error_code"] in ("BAD_REQUEST", "INVALID_PARAMETER_VALUE")
    assert server.get("records", prefix=JOURNAL, experiment_id=eid, sweep="s") == (200, {"records": []})
    assert server.proc.poll() is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_sweep_journal_under_auth_follows_the_experiments_access(backend, tmp_path, request):
    store = store_for(backend, tmp_path, request)
    tokens, cli = users_with_tokens(store)

    def call(user, method, path, body=None, query=None):
        headers = {"Authorization": "Bearer " + tokens[user]} if user else {}
        return s.request(method, path, body=body, query=query, headers=headers)

    s = TrackingServer(tmp_path, ["--auth"], store=store)
    try:
        status, body = call("alice", "POST", "/api/2.0/mlflow/experiments/create", {"name": "sw"})
        eid = body["experiment_id"]
        append = {"experiment_id": eid, "sweep": "sw", "seq": 0, "record": "{}"}
        assert error(call(None, "POST", JOURNAL + "append", append))[:2] == (401, "UNAUTHENTICATED")
        assert error(call("bob", "POST", JOURNAL + "append", append)) == \
            (403, "PERMISSION_DENIED", f"User 'bob' may not edit experiment {eid}")
        assert call("alice", "POST", JOURNAL + "append", append) == (200, {})
        query = {"experiment_id": eid, "sweep": "sw"}
        assert error(call("bob", "GET", JOURNAL + "records", query=query)) == \
            (403, "PERMISSION_DENIED", f"User 'bob' may not read experiment {eid}")
        assert call("alice", "GET", JOURNAL + "records", query=query) == (200, {"records": ["{}"]})
    finally:
        s.stop()
    cli("user", "grant", "bob", "sw", "read")
    s = TrackingServer(tmp_path, ["--auth"], store=store)
    try:
        assert call("bob", "GET", JOURNAL + "records", query=query) == (200, {"records": ["{}"]})
        assert error(call("bob", "POST", JOURNAL + "append", {**append, "seq": 1}))[:2] == \
            (403, "PERMISSION_DENIED")
    finally:
        s.stop()


def test_experiment_activity_counts_active_runs_and_refuses_bad_input(server):
    status, body = server.post("experiments/create", {"name": "activity"})
    eid = body["experiment_id"]
    runs = [new_run(server, eid) for _ in range(3)]
    assert server.post("runs/update", {"run_id": runs[0], "status": "FAILED", "end_time": 5})[0] == 200
    assert server.post("runs/delete", {"run_id": runs[2]}) == (200, {})
    status, body = server.get("experiments/activity", experiment_ids=[eid, "999"])
    assert status == 200
    first, unknown = body["experiments"]
    assert (first["experiment_id"], first["runs"], first["running"], first["failed"]) == (eid, 2, 1, 1)
    assert first["last_activity_time"] > 0
    assert unknown == {"experiment_id": "999", "runs": 0, "running": 0, "finished": 0, "failed": 0,
                       "killed": 0, "last_activity_time": 0}
    assert error(server.get("experiments/activity")) == \
        (400, "INVALID_PARAMETER_VALUE", "Missing value for required parameter 'experiment_ids'. See the "
         "API docs for more information about request parameters.")
    assert error(server.get("experiments/activity", experiment_ids=[str(i) for i in range(1001)])) == \
        (400, "INVALID_PARAMETER_VALUE", "experiments/activity takes at most 1000 experiment_ids; got 1001")
