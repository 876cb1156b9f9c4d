"""The pipelines' status endpoints of `cohort server` (/api/cohort/pipelines,
server/pipeline_status_api.h) that the dashboard's graph view reads: a bad
document refused with a message naming the field, unauthenticated callers
and other users' controllers refused under --auth, and a controller's posts
under --auth with the user's token."""
import subprocess
import sys
import os

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../server"))
from tracking_server_fixture import COHORT, TrackingServer  # noqa: E402

PREFIX = "/api/cohort/pipelines/"
API_DOCS = "See the API docs for more information about request parameters."


def commit(**changes):
    """The provenance record of step a's output commit c1."""
    r = {"pipeline": "demo", "step": "a", "run": "t1", "output": "/d/a", "output_commit": "c1",
         "inputs": [{"name": "RAW", "location": "/d/raw", "commit": "r1", "split": True}],
         "code": {"git_commit": "", "dirty": False, "diff_sha256": ""}, "params": {"k": 1}, "jobs": [1, 2]}
    r.update(changes)
    return r


def doc(name="demo", **changes):
    d = {"pipeline": name, "state": "running", "controller_pid": 7, "started": 1.0, "ended": 0.0,
         "steps": [{"name": "a", "state": "done", "inputs": [{"name": "RAW", "dataset": "/d/raw", "ref": "main"}],
                    "output": "/d/a", "output_commit": "c1", "run": "t1", "jobs": [1, 2],
                    "datums": {"done": 2, "total": 2, "failed": 0}, "failed_datums": {}, "input_commits": []},
                   {"name": "b", "state": "running", "inputs": [{"name": "A", "step": "a"}],
                    "output": "", "output_commit": "", "run": "t2", "jobs": [3],
                    "datums": {"done": 0, "total": 1, "failed": 0}, "failed_datums": {}, "input_commits": []}],
         "commits": [commit()]}
    d.update(changes)
    return d


def error(answer):
    status, body = answer
    return status, body.get("error_code"), body.get("message")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = TrackingServer(tmp_path_factory.mktemp("status-server"))
    yield s
    s.stop()


def test_a_status_document_is_stored_listed_and_replaced(server):
    assert server.post("status", {"name": "demo", "status": doc()}, prefix=PREFIX) == (200, {})
    status, body = server.get("status", prefix=PREFIX, name="demo")
    assert status == 200 and body["status"] == doc() and body["owner"] == ""
    first = body["update_time"]
    done = doc(state="done")
    done["steps"][1].update(state="done", datums={"done": 1, "total": 1, "failed": 0})
    assert server.post("status", {"name": "demo", "status": done}, prefix=PREFIX)[0] == 200
    status, body = server.get("status", prefix=PREFIX, name="demo")
    assert body["status"] == done and body["update_time"] >= first
    status, body = server.get("list", prefix=PREFIX)
    [listed] = [p for p in body["pipelines"] if p["name"] == "demo"]
    assert listed["state"] == "done"
    assert listed["steps"] == [{"name": "a", "state": "done"}, {"name": "b", "state": "done"}]
    # An older controller's document carries no commits' records.
    old = doc()
    del old["commits"]
    assert server.post("status", {"name": "demo", "status": old}, prefix=PREFIX) == (200, {})
    assert error(server.get("status", prefix=PREFIX, name="nope")) == (
        404, "RESOURCE_DOES_NOT_EXIST", "No pipeline named 'nope'")


def bad_step(**changes):
    d = doc()
    d["steps"][1].update(changes)
    return d


@pytest.mark.parametrize("body, message", [
    ({"status": doc()}, f"Missing value for required parameter 'name'. {API_DOCS}"),
    ({"name": "demo"}, f"Missing value for required parameter 'status'. {API_DOCS}"),
    ({"name": "demo", "status": [1]}, "Invalid value [1] for parameter 'status' supplied: expected an object"),
    ({"name": "demo", "status": doc(name="other")},
     "Invalid value for parameter 'status.pipeline' supplied: expected the pipeline's name, 'demo'"),
    ({"name": "demo", "status": doc(state="sleeping")},
     "Invalid value for parameter 'status.state' supplied: 'sleeping' is not waiting, running, done, "
     "failed, broken or stopped"),
    ({"name": "demo", "status": doc(steps={})},
     "Invalid value for parameter 'status.steps' supplied: expected a list of steps"),
    ({"name": "demo", "status": bad_step(state="late")},
     "Invalid value for parameter 'status.steps[1].state' supplied: 'late' is not waiting, running, done, "
     "failed, cached or broken"),
    ({"name": "demo", "status": bad_step(datums={"done": 2, "total": 1, "failed": 0})},
     "Invalid value for parameter 'status.steps[1].datums' supplied: done + failed is more than total"),
    ({"name": "demo", "status": bad_step(datums={"done": -1, "total": 1, "failed": 0})},
     "Invalid value for parameter 'status.steps[1].datums.done' supplied: expected a count (an integer of 0 "
     "or more)"),
    ({"name": "demo", "status": bad_step(inputs=[{"step": "zz"}])},
     "Invalid value for parameter 'status.steps[1].inputs[0].step' supplied: not a step of this pipeline"),
    ({"name": "demo", "status": bad_step(jobs=["x"])},
     "Invalid value for parameter 'status.steps[1].jobs' supplied: expected a list of job ids"),
    ({"name": "demo", "status": doc(commits={})},
     "Invalid value for parameter 'status.commits' supplied: expected a list of provenance records"),
    ({"name": "demo", "status": doc(commits=[commit()] * 51)},
     "Invalid value for parameter 'status.commits' supplied: more than 50 records (a controller sends its "
     "latest 50)"),
    ({"name": "demo", "status": doc(commits=[commit(), "c2"])},
     "Invalid value for parameter 'status.commits[1]' supplied: expected a provenance record (an object)"),
    ({"name": "demo", "status": doc(commits=[commit(step="zz")])},
     "Invalid value for parameter 'status.commits[0].step' supplied: not a step of this pipeline"),
    ({"name": "demo", "status": doc(commits=[commit(output_commit="")])},
     "Invalid value for parameter 'status.commits[0].output_commit' supplied: expected a non-empty string"),
    ({"name": "demo", "status": doc(commits=[commit(inputs=[{"location": "/d/raw"}])])},
     "Invalid value for parameter 'status.commits[0].inputs[0]' supplied: expected an object {location, commit}"),
    ({"name": "demo", "status": doc(commits=[commit(jobs=[-1])])},
     "Invalid value for parameter 'status.commits[0].jobs' supplied: expected a list of job ids"),
    ({"name": "demo", "status": doc(commits=[commit(params=[1])])},
     "Invalid value for parameter 'status.commits[0].params' supplied: expected an object"),
    ({"name": "demo", "status": bad_step(name="a")},
     "Invalid value for parameter 'status.steps' supplied: a second step named 'a'"),
])
def test_bad_documents_are_refused_naming_the_field(server, body, message):
    assert error(server.post("status", body, prefix=PREFIX)) == (400, "INVALID_PARAMETER_VALUE", message)


def test_wrong_methods_and_paths(server):
    assert error(server.request("GET", PREFIX + "nothing"))[:2] == (404, "ENDPOINT_NOT_FOUND")
    assert error(server.request("DELETE", PREFIX + "status", body={}))[0] == 405


def test_under_auth_a_token_is_needed_and_a_pipeline_belongs_to_its_first_poster(tmp_path):
    store = f"sqlite:{tmp_path}/auth.db"

    def cli(*args):
        p = subprocess.run([COHORT, *args, "--store", store], capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        return p.stdout.strip()

    tokens = {}
    for user in ("alice", "bob"):
        cli("user", "add", user)
        tokens[user] = cli("token", "create", user)
    s = TrackingServer(tmp_path, ["--auth"], store=store)
    try:
        def as_user(user, method, endpoint, body=None, query=None):
            return s.request(method, PREFIX + endpoint, body=body, query=query,
                             headers={"Authorization": "Bearer " + tokens[user]} if user else {})
        assert error(as_user(None, "POST", "status", {"name": "demo", "status": doc()}))[:2] == \
            (401, "UNAUTHENTICATED")
        assert error(as_user(None, "GET", "list"))[:2] == (401, "UNAUTHENTICATED")
        assert as_user("alice", "POST", "status", {"name": "demo", "status": doc()}) == (200, {})
        assert error(as_user("bob", "POST", "status", {"name": "demo", "status": doc(state="done")})) == (
            403, "PERMISSION_DENIED",
            "Pipeline 'demo' belongs to user 'alice': another user's controller cannot replace its status")
        status, body = as_user("bob", "GET", "status", query={"name": "demo"})
        assert status == 200 and body["owner"] == "alice" and body["status"]["state"] == "running"
    finally:
        s.stop()


def test_a_controller_under_auth_posts_with_the_users_token(tmp_path):
    """`cohort pipeline run` against an --auth server (its queue too): the
    status it posts is stored as alice's, and equals `status --json`."""
    import json
    from cohort.data import Writer
    store = f"sqlite:{tmp_path}/auth.db"

    def cli(*args):
        p = subprocess.run([COHORT, *args, "--store", store], capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        return p.stdout.strip()

    cli("user", "add", "alice")
    token = cli("token", "create", "alice")
    cli("user", "grant", "alice", "--queue-project", "*", "submit")
    w = Writer.create(str(tmp_path / "raw"), [("label", "label")])
    for v in range(3):
        w.append({"label": v})
    w.commit("raw")
    spec = tmp_path / "p.yaml"
    spec.write_text(json.dumps({"name": "authed", "steps": [
        {"name": "total", "inputs": [{"dataset": "raw"}], "output": "total",
         "command": [sys.executable, os.path.join(os.path.dirname(__file__), "step.py"), "sum"]}]}))
    s = TrackingServer(tmp_path, ["--auth", "--slots", "1"], store=store)
    try:
        env = dict(os.environ, COHORT_SERVER=s.url, COHORT_TRACKING_TOKEN=token)
        p = subprocess.run([COHORT, "pipeline", "run", str(spec)], capture_output=True, text=True,
                           timeout=60, env=env, cwd=tmp_path)
        assert p.returncode == 0 and p.stderr == "", p.stdout + p.stderr
        p = subprocess.run([COHORT, "pipeline", "status", str(spec), "--json"], capture_output=True,
                           text=True, timeout=30, env=env, cwd=tmp_path)
        status, body = s.request("GET", PREFIX + "status", query={"name": "authed"},
                                 headers={"Authorization": "Bearer " + token})
        assert status == 200 and body["owner"] == "alice"
        assert body["status"] == json.loads(p.stdout)
        assert body["status"]["state"] == "done"
        assert [(x["name"], x["state"], x["datums"]) for x in body["status"]["steps"]] == [
            ("total", "done", {"done": 1, "total": 1, "failed": 0})]
    finally:
        s.stop()
