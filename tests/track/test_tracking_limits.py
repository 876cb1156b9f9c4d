"""What `cohort server` answers to requests past the tracking store's limits:
a run search with too many order_by keys or filter clauses, and a metric step
beyond a signed 64-bit integer, are bad requests (400) naming the limit or
the field, never an internal error carrying SQL, and nothing is stored."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "server"))
from tracking_server_fixture import TrackingServer  # noqa: E402


@pytest.fixture
def server(tmp_path):
    s = TrackingServer(tmp_path)
    yield s
    s.stop()


def new_run(server):
    status, body = server.post("runs/create", {"experiment_id": "0", "start_time": 1})
    assert status == 200, body
    return body["run"]["info"]["run_id"]


def test_too_many_order_by_keys_or_filter_clauses_are_bad_requests(server):
    run_id = new_run(server)
    status, body = server.post("runs/log-metric", {
        "run_id": run_id, "key": "m0", "value": 1, "timestamp": 1, "step": 0})
    assert status == 200, body
    status, body = server.post("runs/search", {
        "experiment_ids": ["0"], "order_by": ["metrics.m%d DESC" % i for i in range(70)]})
    assert (status, body) == (400, {
        "error_code": "INVALID_PARAMETER_VALUE",
        "message": "Invalid order_by: 70 clauses, more than the limit of 16"})
    # 40 keys: 82 ORDER BY terms over 41 tables, which SQLite 3.40 answered
    # with SIGSEGV; the server must still be there afterwards.
    status, body = server.post("runs/search", {
        "experiment_ids": ["0"], "order_by": ["metrics.m%d" % i for i in range(40)]})
    assert (status, body["message"]) == (400, "Invalid order_by: 40 clauses, more than the "
                                              "limit of 16")
    assert server.proc.poll() is None
    status, body = server.post("runs/search", {
        "experiment_ids": ["0"],
        "filter": " AND ".join("params.p%d = 'x'" % i for i in range(1001))})
    assert (status, body) == (400, {
        "error_code": "INVALID_PARAMETER_VALUE",
        "message": "Invalid filter: more than 100 clauses (the limit)"})
    status, body = server.post("experiments/search", {
        "max_results": 10, "order_by": ["name"] * 17})
    assert (status, body["message"]) == (400, "Invalid order_by: 17 clauses, more than the "
                                              "limit of 16")
    # At the limits the search runs. (Between 31 and 63 keys SQLite 3.40
    # used to crash the server: 64 ORDER BY terms with a join.)
    status, body = server.post("runs/search", {
        "experiment_ids": ["0"], "order_by": ["metrics.m%d DESC" % i for i in range(16)],
        "filter": " AND ".join("params.p%d != 'x'" % i for i in range(100))})
    assert status == 200, body


def test_step_beyond_int64_is_refused_naming_the_field(server):
    run_id = new_run(server)
    status, body = server.post("runs/log-metric", {
        "run_id": run_id, "key": "m", "value": 1, "timestamp": 1, "step": 2**64 - 1})
    assert (status, body) == (400, {
        "error_code": "INVALID_PARAMETER_VALUE",
        "message": "Invalid value 18446744073709551615 for parameter 'step' supplied: expected "
                   "an integer (-9223372036854775808 to 9223372036854775807)"})
    status, body = server.post("runs/log-batch", {"run_id": run_id, "metrics": [
        {"key": "m", "value": 1, "timestamp": 1, "step": 0},
        {"key": "m", "value": 2, "timestamp": 1, "step": 2**63}]})
    assert (status, body["message"]) == (400, (
        "Invalid value 9223372036854775808 for parameter 'metrics[1].step' supplied: expected "
        "an integer (-9223372036854775808 to 9223372036854775807)"))
    status, body = server.get("metrics/get-history", run_id=run_id, metric_key="m")
    assert status == 200 and body.get("metrics", []) == [], body
    # The largest step there is is kept as it is.
    status, body = server.post("runs/log-metric", {
        "run_id": run_id, "key": "m", "value": 3, "timestamp": 1, "step": 2**63 - 1})
    assert status == 200, body
    status, body = server.get("metrics/get-history", run_id=run_id, metric_key="m")
    assert [p["step"] for p in body["metrics"]] == [2**63 - 1]
