"""`cohort pipeline` on a real queue (`cohort server --slots 2` on loopback)
over real local datasets: DAG order, incremental add/change/remove, cache
hits and misses, a datum that always fails, kill -9 of a step and of the
controller, stop and resume, watch, and the errors `run` refuses with."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../server"))
from tracking_server_fixture import COHORT, TrackingServer  # noqa: E402

from cohort.data import Dataset, Writer  # noqa: E402

DEADLINE_S = 60
STEP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "step.py")
PYTHONPATH = os.environ.get("PYTHONPATH", "")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = TrackingServer(tmp_path_factory.mktemp("server"), ["--slots", "2", "--grace", "1"])
    yield s
    s.stop()


def spec(tmp_path, *, add=1, batch=3, retries=2, command_extra=(), parallel=3, total=True):
    square = [sys.executable, STEP, "square", *command_extra]
    text = {
        "name": "demo", "parallel": parallel,
        "steps": [{"name": "sq", "inputs": [{"dataset": "raw@main", "glob": "sample"}],
                   "command": square, "params": {"add": add}, "retries": retries,
                   "resources": {"batch": batch}, "output": "squared"}]}
    if total:
        text["steps"].insert(0, {"name": "total", "inputs": [{"step": "sq"}],
                                 "command": [sys.executable, STEP, "sum"], "output": "total"})
    path = tmp_path / "p.yaml"
    path.write_text(json.dumps(text))  # JSON is YAML
    return str(path)


def raw(tmp_path, labels):
    w = Writer.create(str(tmp_path / "raw"), [("label", "label")])
    for v in labels:
        w.append({"label": v})
    return w.commit("raw")


def env(server, tmp_path, **extra):
    return dict(os.environ, COHORT_SERVER=server.url, PYTHONPATH=PYTHONPATH,
                PIPELINE_COUNT=str(tmp_path / "count"), **extra)


def pipeline(server, tmp_path, *args, **extra):
    p = subprocess.run([COHORT, "pipeline", *args], capture_output=True, text=True,
                       timeout=DEADLINE_S, env=env(server, tmp_path, **extra), cwd=tmp_path)
    return p.returncode, p.stdout, p.stderr


def status_json(server, tmp_path, spec_path="p.yaml"):
    rc, out, err = pipeline(server, tmp_path, "status", spec_path, "--json")
    assert rc == 0, err
    return json.loads(out)


def counts(tmp_path):
    """Each (step, datum id) processed -> how many times; then forget them."""
    path = tmp_path / "count"
    lines = path.read_text().split("\n")[:-1] if path.exists() else []
    path.write_text("")
    out = {}
    for line in lines:
        out[line] = out.get(line, 0) + 1
    return out


def labels(location):
    return [int(s["label"]) for s in Dataset.open(str(location), "main")]


def labels_once_made(location):
    """labels(), or None while the dataset is not made yet (its folder may come first)."""
    try:
        return labels(location)
    except (ValueError, RuntimeError):
        return None


def test_dag_order_and_incremental_add_change_remove(server, tmp_path):
    raw(tmp_path, range(10))
    p = spec(tmp_path)  # `total` is listed first but reads `sq`'s output
    rc, out, err = pipeline(server, tmp_path, "run", p)
    assert rc == 0, out + err
    assert out.index("step sq: 10 datums to process (all)") < out.index("step total:")
    assert labels(tmp_path / "squared") == [v * v + 1 for v in range(10)]
    assert labels(tmp_path / "total") == [sum(v * v + 1 for v in range(10))]
    assert counts(tmp_path) == {**{f"sq {i}": 1 for i in range(10)}, "total whole": 1}
    rc, out, _ = pipeline(server, tmp_path, "run", p)
    assert (rc, out) == (0, "cohort pipeline: step sq: up to date\n"
                            "cohort pipeline: step total: up to date\n")
    assert counts(tmp_path) == {}
    ds = Dataset.open(str(tmp_path / "raw"))
    ids = [ds.sample_id(i) for i in range(len(ds))]
    w = Writer.open(str(tmp_path / "raw"))
    w.append({"label": 10})   # added
    w.update(3, {"label": 30})  # changed
    w.delete(0)                 # removed
    w.commit("edit")
    rc, out, err = pipeline(server, tmp_path, "run", p)
    assert rc == 0, out + err
    assert "step sq: 2 datums to process (incremental), 2 results to remove" in out
    assert counts(tmp_path) == {f"sq {ids[3]}": 1, f"sq {max(ids) + 1}": 1, "total whole": 1}
    expected = [v * v + 1 for v in [1, 2, 30, 4, 5, 6, 7, 8, 9, 10]]
    assert sorted(labels(tmp_path / "squared")) == sorted(expected)
    assert labels(tmp_path / "total") == [sum(expected)]
    rc, out, _ = pipeline(server, tmp_path, "status", p)
    assert out.splitlines()[1:] == [
        "  total: done, 1 results, output " + Dataset.open(str(tmp_path / "total")).commit["id"][:12],
        "  sq: done, 10 results, output " + Dataset.open(str(tmp_path / "squared")).commit["id"][:12]]


def test_cache_hits_and_misses_on_each_component(server, tmp_path):
    raw(tmp_path, range(4))
    assert pipeline(server, tmp_path, "run", spec(tmp_path, add=1, total=False))[0] == 0
    first = Dataset.open(str(tmp_path / "squared")).commit["id"]
    counts(tmp_path)
    # A parameter: a miss, and every datum again (earlier results used other params).
    rc, out, _ = pipeline(server, tmp_path, "run", spec(tmp_path, add=2, total=False))
    assert rc == 0 and "step sq: 4 datums to process (all)" in out
    assert counts(tmp_path) == {f"sq {i}": 1 for i in range(4)}
    assert labels(tmp_path / "squared") == [v * v + 2 for v in range(4)]
    # Back to the first parameters: a hit; no job, and the first output is current again.
    rc, out, _ = pipeline(server, tmp_path, "run", spec(tmp_path, add=1, total=False))
    assert (rc, out) == (0, f"cohort pipeline: step sq: cached (output {first[:12]})\n")
    assert counts(tmp_path) == {}
    assert [(s["name"], s["state"]) for s in status_json(server, tmp_path)["steps"]] == [("sq", "cached")]
    assert Dataset.open(str(tmp_path / "squared")).commit["id"] == first
    # The input's commit: a miss, processed incrementally from the cached run's results.
    w = Writer.open(str(tmp_path / "raw"))
    w.append({"label": 7})
    w.commit("one more")
    rc, out, _ = pipeline(server, tmp_path, "run", spec(tmp_path, add=1, total=False))
    assert rc == 0 and "step sq: 1 datum to process (incremental), 0 results to remove" in out
    assert counts(tmp_path) == {"sq 4": 1}
    # The command: a miss, every datum again.
    rc, out, _ = pipeline(server, tmp_path, "run",
                          spec(tmp_path, add=1, total=False, command_extra=["--again"]))
    assert rc == 0 and "step sq: 5 datums to process (all)" in out
    assert counts(tmp_path) == {f"sq {i}": 1 for i in range(5)}
    # --force: everything again though the key matches.
    rc, out, _ = pipeline(server, tmp_path, "run",
                          spec(tmp_path, add=1, total=False, command_extra=["--again"]), "--force")
    assert rc == 0 and counts(tmp_path) == {f"sq {i}": 1 for i in range(5)}
    assert labels(tmp_path / "squared") == [v * v + 1 for v in [0, 1, 2, 3, 7]]


def test_a_datum_that_always_fails_is_reported_and_the_others_committed(server, tmp_path):
    raw(tmp_path, range(6))
    ids = [Dataset.open(str(tmp_path / "raw")).sample_id(i) for i in range(6)]
    p = spec(tmp_path, batch=3, retries=1, total=False)
    rc, out, err = pipeline(server, tmp_path, "run", p, PIPELINE_FAIL_LABEL="4")
    assert rc == 1, out + err
    # The batch of 3 failed twice, was split, and only datum 4 failed twice more.
    assert out.count(f"step sq: datums {ids[3]},{ids[4]},{ids[5]}: job ") == 2
    assert out.count(f"step sq: datum {ids[4]}: job ") == 2
    assert f"step sq: datum {ids[4]} failed after 2 attempts: job " in out
    assert labels(tmp_path / "squared") == [v * v + 1 for v in [0, 1, 2, 3, 5]]
    rc, status, _ = pipeline(server, tmp_path, "status", p)
    assert "  sq: done with failed datums, 5 results" in status
    assert f"    datum {ids[4]} failed: job " in status and "exit status 1" in status
    counts(tmp_path)
    # Fixed: the next run processes the failed datum only.
    rc, out, _ = pipeline(server, tmp_path, "run", p)
    assert rc == 0 and "step sq: 1 datum to process (incremental), 0 results to remove" in out
    assert counts(tmp_path) == {f"sq {ids[4]}": 1}
    assert labels(tmp_path / "squared") == [v * v + 1 for v in [0, 1, 2, 3, 5, 4]]


def test_kill_9_of_a_step_is_retried(server, tmp_path):
    raw(tmp_path, range(4))
    rc, out, err = pipeline(server, tmp_path, "run", spec(tmp_path, batch=1, total=False),
                            PIPELINE_KILL_LABEL="2")
    assert rc == 0, out + err
    assert "step sq: datum 2: job " in out and " failed: exit status 137\n" in out
    assert counts(tmp_path) == {f"sq {i}": 1 for i in range(4)}
    assert labels(tmp_path / "squared") == [v * v + 1 for v in range(4)]


def state(tmp_path):
    path = tmp_path / ".cohort-pipeline/demo/state.json"
    return json.loads(path.read_text()) if path.exists() else {}


def running_jobs(tmp_path):
    run = state(tmp_path).get("steps", {}).get("sq", {}).get("run", {})
    return [b["job"] for b in run.get("batches", []) if b["state"] == "running"]


def wait_until(what, check):
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.02)


def controller(server, tmp_path, p, **extra):
    return subprocess.Popen([COHORT, "pipeline", "run", p], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
                            env=env(server, tmp_path, **extra))


@pytest.mark.parametrize("how", ["kill -9", "stop"])
def test_a_stopped_or_killed_controller_resumes_without_rerunning(server, tmp_path, how):
    raw(tmp_path, range(6))
    p = spec(tmp_path, batch=1, parallel=2, total=False)
    gate = tmp_path / "gate"
    c = controller(server, tmp_path, p, PIPELINE_GATE=str(gate))
    wait_until("two jobs running", lambda: len(running_jobs(tmp_path)) == 2)
    if how == "kill -9":
        c.kill()
        assert c.wait(timeout=DEADLINE_S) == -signal.SIGKILL
    else:
        rc, out, _ = pipeline(server, tmp_path, "stop", p)
        assert rc == 0 and out == f"asked the controller (pid {c.pid}) to stop; its jobs go on\n"
        assert c.wait(timeout=DEADLINE_S) == 3
        assert "stopped (signal 15); run the same command to continue" in c.stdout.read()
    adopted = running_jobs(tmp_path)
    gate.touch()  # the two jobs finish while no controller runs
    wait_until("both datums done", lambda: len(counts_peek(tmp_path)) == 2)
    rc, out, err = pipeline(server, tmp_path, "run", p)
    assert rc == 0, out + err
    assert "step sq: resuming its run" in out
    assert counts(tmp_path) == {f"sq {i}": 1 for i in range(6)}  # each exactly once
    assert labels(tmp_path / "squared") == [v * v + 1 for v in range(6)]
    made = json.loads((tmp_path / ".cohort-pipeline/demo/provenance.jsonl").read_text())
    assert set(adopted) <= set(made["jobs"]) and len(made["jobs"]) == 6


def counts_peek(tmp_path):
    path = tmp_path / "count"
    return path.read_text().split("\n")[:-1] if path.exists() else []


def test_watch_runs_on_each_new_commit(server, tmp_path):
    raw(tmp_path, range(3))
    w = subprocess.Popen([COHORT, "pipeline", "watch", spec(tmp_path, total=False), "--every",
                          "0.05"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         cwd=tmp_path, env=env(server, tmp_path))
    try:
        wait_until("the first run", lambda: labels_once_made(tmp_path / "squared") == [1, 2, 5])
        writer = Writer.open(str(tmp_path / "raw"))
        writer.append({"label": 3})
        writer.commit("new")
        wait_until("the second run", lambda: labels(tmp_path / "squared") == [1, 2, 5, 10])
    finally:
        w.terminate()
        assert w.wait(timeout=DEADLINE_S) == 3
    assert counts(tmp_path) == {f"sq {i}": 1 for i in range(4)}


def test_run_refuses_cycles_unknown_inputs_and_malformed_specs(server, tmp_path):
    cases = {
        "name: p\nsteps:\n  - {name: a, inputs: [{step: b}], command: x, output: o}\n"
        "  - {name: b, inputs: [{step: a}], command: x, output: o2}\n":
            "p.yaml:3: step 'a': cycle: a -> b -> a",
        "name: p\nsteps:\n  - name: a\n    inputs: [{step: nope}]\n    command: x\n":
            "p.yaml:4: step 'a': input 'nope' is not a step of this pipeline",
        "name: p\nsteps:\n  - name: a\n    inputs: [{dataset: d}]\n    command: [x\n":
            "p.yaml:6: not valid YAML: end of sequence flow not found",
    }
    for text, message in cases.items():
        (tmp_path / "p.yaml").write_text(text)
        assert pipeline(server, tmp_path, "run", "p.yaml") == (
            1, "", f"cohort pipeline: {message}\n")
    assert not (tmp_path / ".cohort-pipeline").exists()
    (tmp_path / "p.yaml").write_text(
        "name: p\nsteps:\n  - name: a\n    inputs: [{dataset: missing}]\n    command: x\n")
    rc, out, err = pipeline(server, tmp_path, "run", "p.yaml")
    assert rc == 1 and err.startswith(f"cohort pipeline: step 'a': input {tmp_path}/missing@main: ")


def test_provenance_backwards_and_forwards(server, tmp_path):
    raw(tmp_path, range(3))
    p = spec(tmp_path)
    assert pipeline(server, tmp_path, "run", p)[0] == 0
    sq = Dataset.open(str(tmp_path / "squared")).commit["id"]
    total = Dataset.open(str(tmp_path / "total")).commit
    record = json.loads(total["command"][len("cohort-pipeline "):])
    assert record["pipeline"] == "demo" and record["step"] == "total"
    assert record["inputs"] == [{"name": "SQ", "location": str(tmp_path / "squared"),
                                 "commit": sq, "split": False}]
    assert set(record["code"]) == {"git_commit", "dirty", "diff_sha256"}
    assert len(record["jobs"]) == 1
    rc, out, _ = pipeline(server, tmp_path, "provenance", p, "total")
    lines = out.splitlines()
    raw_commit = Dataset.open(str(tmp_path / "raw")).commit["id"]
    assert lines[0] == "made from:"
    assert lines[1].startswith(f"  {tmp_path}/total@{total['id'][:12]}: made by pipeline demo, "
                               "step total, code ")
    assert lines[2].startswith(f"    {tmp_path}/squared@{sq[:12]}: made by pipeline demo, step sq")
    assert '"add":"1"' in lines[2]
    assert lines[3] == f"      {tmp_path}/raw@{raw_commit[:12]}: raw data (raw)"
    rc, out, _ = pipeline(server, tmp_path, "provenance", p, "raw@main")
    assert out.splitlines()[-3:] == [
        "used by (re-run these if it is bad):",
        f"  {tmp_path}/squared@{sq[:12]}: step sq of pipeline demo",
        f"  {tmp_path}/total@{total['id'][:12]}: step total of pipeline demo"]


def test_a_tracked_run_of_a_step_records_its_provenance(server, tmp_path):
    raw_commit = raw(tmp_path, range(3))
    (tmp_path / "p.yaml").write_text(json.dumps({"name": "tracked", "steps": [
        {"name": "train", "inputs": [{"dataset": "raw"}],
         "command": [sys.executable, STEP, "track"]}]}))
    db = tmp_path / "tracking.db"
    rc, out, err = pipeline(server, tmp_path, "run", "p.yaml", PIPELINE_TRACK_URI=f"sqlite:{db}")
    assert rc == 0, out + err
    job = json.loads((tmp_path / ".cohort-pipeline/tracked/provenance.jsonl").read_text())
    with sqlite3.connect(db) as c:
        tags = dict(c.execute("SELECT key, value FROM tags WHERE key LIKE 'cohort.pipeline%'"))
    assert tags == {"cohort.pipeline": "tracked", "cohort.pipeline.step": "train",
                    "cohort.pipeline.run": job["run"], "cohort.pipeline.job": str(job["jobs"][0]),
                    "cohort.pipeline.input.raw": f"{tmp_path}/raw@{raw_commit}"}


def test_a_step_that_fails_on_every_datum_stops_early(server, tmp_path):
    raw(tmp_path, range(40))
    (tmp_path / "p.yaml").write_text(json.dumps({"name": "broken", "parallel": 2, "steps": [
        {"name": "sq", "inputs": [{"dataset": "raw", "glob": "sample"}], "retries": 0,
         "resources": {"batch": 10}, "command": ["sh", "-c", "exit 7"], "output": "out"}]}))
    rc, out, err = pipeline(server, tmp_path, "run", "p.yaml")
    assert rc == 1
    assert err.startswith("cohort pipeline: step 'sq': 3 datums failed alone and none succeeded, "
                          "so the step itself fails (the last: job ")
    assert "exit status 7" in err
    # 4 batches, then single datums of the first two to fail: far from 40 jobs.
    assert out.count(": job ") <= 4 + 2 * 10
    assert "step sq: datums 0,1,2,3,4,... (10 datums): job " in out
    assert not (tmp_path / "out").exists()
    status = status_json(server, tmp_path, "p.yaml")
    assert status["state"] == "broken" and status["error"] == err[len("cohort pipeline: "):-1]
    [step] = status["steps"]
    assert step["state"] == "broken" and step["error"].startswith("3 datums failed alone")
    assert step["datums"]["failed"] == 3 and len(step["failed_datums"]) == 3


def test_a_controller_killed_after_the_output_commit_commits_once(server, tmp_path):
    """The controller dies (COHORT_TESTING_PIPELINE_EXIT_AT) right after
    writing a step's output commit, before its state records it: the next run
    finds that commit by its run id instead of writing a second one, and
    re-runs no batch."""
    raw(tmp_path, range(4))
    p = spec(tmp_path, batch=2, total=False)
    rc, out, err = pipeline(server, tmp_path, "run", p,
                            COHORT_TESTING_PIPELINE_EXIT_AT="output-committed")
    assert rc == 99, out + err
    made = Dataset.open(str(tmp_path / "squared")).commit
    sq = state(tmp_path)["steps"]["sq"]
    assert "done" not in sq and all(b["state"] == "done" for b in sq["run"]["batches"])
    assert counts(tmp_path) == {f"sq {i}": 1 for i in range(4)}
    rc, out, err = pipeline(server, tmp_path, "run", p)
    assert rc == 0, out + err
    assert out.startswith("cohort pipeline: step sq: resuming its run\n"
                          "cohort pipeline: step sq: 2 batches done in ") and "to process" not in out
    assert counts(tmp_path) == {}
    assert Dataset.open(str(tmp_path / "squared")).commit == made
    created = Dataset.open(str(tmp_path / "squared"), made["parent"]).commit  # the only other commit
    assert created["message"] == "create dataset" and not created["parent"]
    assert labels(tmp_path / "squared") == [v * v + 1 for v in range(4)]
    assert state(tmp_path)["steps"]["sq"]["done"]["output_commit"] == made["id"]


def queue_job(server, job):
    """The queue's record of `job` (its started and finished times)."""
    folder = os.path.dirname(server.store[len("sqlite:"):])
    with open(os.path.join(folder, "queue-token")) as f:
        token = f.read().strip()
    req = urllib.request.Request(f"{server.url}/api/queue/jobs/{job}",
                                 headers={"X-Cohort-Queue-Token": token})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def test_independent_steps_run_at_the_same_time(server, tmp_path):
    raw(tmp_path, range(5))
    (tmp_path / "meet").mkdir()
    meet = [sys.executable, STEP, "meet"]
    (tmp_path / "p.yaml").write_text(json.dumps({"name": "demo", "parallel": 2, "steps": [
        {"name": "a", "inputs": [{"dataset": "raw"}], "command": meet, "output": "a", "retries": 0},
        {"name": "b", "inputs": [{"dataset": "raw"}], "command": meet, "output": "b", "retries": 0}]}))
    rc, out, err = pipeline(server, tmp_path, "run", "p.yaml", PIPELINE_MEET_DIR=str(tmp_path / "meet"),
                            PIPELINE_MEET="a,b")
    assert rc == 0, out + err
    assert labels(tmp_path / "a") == labels(tmp_path / "b") == [10]
    steps = state(tmp_path)["steps"]
    [a], [b] = steps["a"]["done"]["jobs"], steps["b"]["done"]["jobs"]
    a, b = queue_job(server, a), queue_job(server, b)
    assert a["started"] < b["finished"] and b["started"] < a["finished"], (a, b)


def test_a_broken_step_does_not_stop_an_independent_one(server, tmp_path):
    raw(tmp_path, range(5))
    ran = tmp_path / "bad-ran"
    (tmp_path / "p.yaml").write_text(json.dumps({"name": "demo", "steps": [
        {"name": "bad", "inputs": [{"dataset": "raw", "glob": "sample"}], "retries": 0,
         "resources": {"batch": 5}, "command": ["sh", "-c", f"touch {ran}; exit 7"], "output": "bad"},
        {"name": "after", "inputs": [{"step": "bad"}], "command": [sys.executable, STEP, "sum"],
         "output": "after"},
        {"name": "good", "inputs": [{"dataset": "raw"}], "command": [sys.executable, STEP, "sum"],
         "output": "good"}]}))
    # good's job finishes only once bad's first job has run: both are under way at once.
    rc, out, err = pipeline(server, tmp_path, "run", "p.yaml", PIPELINE_GATE=str(ran))
    assert rc == 1
    assert err.startswith("cohort pipeline: step 'bad': 3 datums failed alone and none succeeded")
    assert labels(tmp_path / "good") == [10]
    assert counts(tmp_path) == {"good whole": 1}
    assert not (tmp_path / "after").exists()
    steps = {s["name"]: s for s in status_json(server, tmp_path)["steps"]}
    assert [(n, steps[n]["state"]) for n in ("bad", "after", "good")] == [
        ("bad", "broken"), ("after", "broken"), ("good", "done")]
    assert steps["after"]["error"] == "input step 'bad' failed, so this step did not run"
