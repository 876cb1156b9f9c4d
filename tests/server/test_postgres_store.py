"""`cohort server --store postgresql://...`: what only the PostgreSQL store
has (bad URIs, wrong passwords, unreachable servers, a PostgreSQL restart
under a running server, schema versions). The REST contract over this store
is in test_mlflow_api.py."""
import subprocess

import pytest

import postgres_cluster
from tracking_server_fixture import COHORT, TrackingServer


@pytest.fixture(scope="module")
def cluster():
    if not postgres_cluster.available():
        pytest.skip(f"PostgreSQL 15 is not installed ({postgres_cluster.BIN}/initdb missing): "
                    "apt-get install postgresql-15")
    c = postgres_cluster.PostgresCluster(fsync=False)
    yield c
    c.stop()


def start_fails(store):
    """(exit code, stderr) of a `cohort server` that cannot open `store`."""
    p = subprocess.run([COHORT, "server", "--store", store, "--port", "0"], capture_output=True,
                       text=True, timeout=60)
    return p.returncode, p.stderr


def test_bad_uris_are_named_without_the_password(cluster):
    port, pw, user = cluster.port, postgres_cluster.PASSWORD, postgres_cluster.USER
    rc, err = start_fails(cluster.uri("track_db", password="wrong-pw"))
    assert rc == 1
    assert err == (f"cohort server: cannot connect to tracking store postgresql://{user}@127.0.0.1:"
                   f"{port}/track_db: connection to server at \"127.0.0.1\", port {port} failed: "
                   f"FATAL:  password authentication failed for user \"{user}\"\n")
    rc, err = start_fails(cluster.uri("no_such_db"))
    assert rc == 1
    assert err == (f"cohort server: cannot connect to tracking store postgresql://{user}@127.0.0.1:"
                   f"{port}/no_such_db: connection to server at \"127.0.0.1\", port {port} failed: "
                   "FATAL:  database \"no_such_db\" does not exist\n")
    with __import__("socket").socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    rc, err = start_fails(f"postgresql://{user}:{pw}@127.0.0.1:{dead}/x")
    assert rc == 1
    assert err.startswith(f"cohort server: cannot connect to tracking store postgresql://{user}@"
                          f"127.0.0.1:{dead}/x: connection to server at \"127.0.0.1\", port {dead}"
                          " failed: Connection refused")
    rc, err = start_fails(f"postgresql://{user}:{pw}@127.0.0.1:notaport/x?password={pw}")
    assert (rc, err) == (1, f"cohort server: cannot connect to tracking store postgresql://{user}@"
                            "127.0.0.1:notaport/x: invalid integer value \"notaport\" for connection "
                            "option \"port\"\n")
    # libpq quotes a URI it cannot parse: the password is taken out there too.
    assert start_fails(f"postgresql://{user}:{pw}@[::1") == \
        (1, f"cohort server: cannot connect to tracking store postgresql://{user}@[::1: end of "
            "string reached when looking for matching \"]\" in IPv6 host address in URI: "
            f"\"postgresql://{user}@[::1\"\n")


def test_a_newer_schema_is_refused(cluster, tmp_path):
    uri = cluster.new_database()
    TrackingServer(tmp_path, store=uri).stop()  # creates the schema
    database = uri.rsplit("/", 1)[1]
    assert cluster.sql("SELECT version FROM cohort_schema_version", database) == "9\n"
    cluster.sql("UPDATE cohort_schema_version SET version = 99", database)
    rc, err = start_fails(uri)
    shown = uri.replace(":" + postgres_cluster.PASSWORD + "@", "@")
    assert (rc, err) == (1, f"cohort server: migrating tracking store {shown}: tracking store "
                            f"{shown} has schema version 99, newer than this cohort's 9: upgrade "
                            "cohort\n")


def test_postgresql_restart_under_a_running_server(cluster, tmp_path):
    uri = cluster.new_database()
    server = TrackingServer(tmp_path, store=uri)
    try:
        status, body = server.post("runs/create", {"experiment_id": "0"})
        assert status == 200
        rid = body["run"]["info"]["run_id"]
        metric = {"run_id": rid, "key": "m", "value": 1.0, "timestamp": 1, "step": 0}
        assert server.post("runs/log-metric", metric) == (200, {})
        cluster.restart()
        # The server finds its session gone at the batch's BEGIN, before
        # anything ran, and starts it again on a new one.
        assert server.post("runs/log-metric", {**metric, "step": 1}) == (200, {})
        cluster.restart()
        status, body = server.get("runs/get", run_id=rid)  # a read is retried the same way
        assert status == 200 and body["run"]["data"]["metrics"][0]["step"] == 1
        status, body = server.get("metrics/get-history", run_id=rid, metric_key="m")
        assert [m["step"] for m in body["metrics"]] == [0, 1]
    finally:
        server.stop()


def test_multi_row_inserts_count_each_new_point_once(cluster, tmp_path):
    """PostgreSQL writes points 500 rows an INSERT and learns the new ones from
    RETURNING: replayed and overlapping batches must leave the per-bucket
    summaries (what long histories are downsampled from) exact."""
    uri = cluster.new_database()
    server = TrackingServer(tmp_path, store=uri)
    try:
        status, body = server.post("runs/create", {"experiment_id": "0"})
        rid = body["run"]["info"]["run_id"]

        def batch(steps):
            return {"run_id": rid, "metrics": [
                {"key": "m", "value": float((s * 37) % 101), "timestamp": 7, "step": s}
                for s in steps]}

        # 700 points: INSERTs of 500 and 200 rows.
        assert server.post("runs/log-batch", batch(range(0, 700))) == (200, {})
        assert server.post("runs/log-batch", batch(range(0, 700))) == (200, {})  # all old
        assert server.post("runs/log-batch", batch(range(400, 1100))) == (200, {})  # 400 new
        assert server.post("runs/log-batch", batch(range(1100, 2100))) == (200, {})
        status, body = server.get("metrics/get-history", run_id=rid, metric_key="m")
        assert [p["step"] for p in body["metrics"]] == list(range(2100))
        rows = cluster.sql("SELECT bucket, count, min_step, min_value, max_step, max_value"
                           " FROM metric_buckets ORDER BY bucket", uri.rsplit("/", 1)[1])
        expected = []
        for bucket in range(3):
            steps = range(bucket * 1024, min(2100, (bucket + 1) * 1024))
            value = {s: (s * 37) % 101 for s in steps}
            low = min(steps, key=lambda s: (value[s], s))
            high = min(steps, key=lambda s: (-value[s], s))
            expected.append(f"{bucket}|{len(steps)}|{low}|{value[low]}|{high}|{value[high]}")
        assert rows.split() == expected
    finally:
        server.stop()
