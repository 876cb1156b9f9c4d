"""`cohort sweep` recording its trials in a real `cohort server` on loopback:
a run per trial under the sweep's run (params, metric history equal to the
journal's reports, state, status, the failed trial's error), the tracking URI
from the environment, and a stopped controller whose restart goes on in new
runs of the same sweep."""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from tracking_server_fixture import TrackingServer  # noqa: E402
from test_sweep import (COHORT, FAIL_SPEC, ASHA_SPEC, journal, runs, sweep_env,  # noqa: E402
                        write_spec)


def sweep_runs(server, name):
    status, body = server.get("experiments/get-by-name", experiment_name=name)
    assert status == 200, body
    eid = body["experiment"]["experiment_id"]
    status, body = server.post("runs/search", {"experiment_ids": [eid], "max_results": 100})
    assert status == 200, body
    out = []
    for r in body.get("runs", []):
        data = r["data"]
        out.append({"id": r["info"]["run_id"], "name": r["info"]["run_name"],
                    "status": r["info"]["status"],
                    "tags": {t["key"]: t["value"] for t in data.get("tags", [])},
                    "params": {p["key"]: p["value"] for p in data.get("params", [])}})
    return out


def history(server, run_id, key):
    status, body = server.get("metrics/get-history", run_id=run_id, metric_key=key)
    assert status == 200, body
    return sorted((m["step"], m["value"]) for m in body.get("metrics", []))


def by_role(found, role):
    return [r for r in found if r["tags"].get("cohort.sweep.role") == role]


def test_trials_are_runs_of_the_sweep_with_their_history(tmp_path):
    server = TrackingServer(tmp_path)
    try:
        spec = write_spec(tmp_path, FAIL_SPEC)
        sweep_dir = str(tmp_path / "s")
        env = dict(sweep_env(tmp_path, 0), COHORT_TRACKING_URI=server.url)  # no --tracking
        out = subprocess.run([COHORT, "sweep", spec, "--dir", sweep_dir], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        assert out.returncode == 0, out.stdout.decode()
        found = sweep_runs(server, "fail-test")
        [parent] = by_role(found, "sweep")
        assert parent["status"] == "FINISHED"
        assert parent["tags"]["cohort.sweep.id"] == parent["id"]
        assert parent["params"]["algorithm"] == "grid" and parent["params"]["metric"] == "loss"
        trials = {int(r["tags"]["cohort.sweep.trial"]): r for r in by_role(found, "trial")}
        assert sorted(trials) == [0, 1, 2, 3, 4, 5]
        records = journal(sweep_dir)
        for tid, run in trials.items():
            assert run["name"] == "fail-test-trial-%d" % tid
            assert run["tags"]["mlflow.parentRunId"] == parent["id"]
            assert run["tags"]["cohort.sweep.id"] == parent["id"]
            assert run["params"]["behave"] == ["ok", "crash", "silent"][tid % 3]
            assert float(run["params"]["x"]) == [0.25, 0.5][tid // 3]
            reports = [(r["step"], r["value"]) for r in records
                       if r["op"] == "report" and r["trial"] == tid]
            assert history(server, run["id"], "loss") == reports
            assert {"op": "run", "trial": tid, "run": run["id"]} in records
            assert "cohort.sweep.rungs" not in run["tags"]  # grid has no rungs
        for tid in (0, 3):  # ok: completed
            assert (trials[tid]["status"], trials[tid]["tags"]["cohort.sweep.state"]) == \
                ("FINISHED", "completed")
            assert [s for s, _ in history(server, trials[tid]["id"], "loss")] == [1, 2]
        for tid in (1, 4):  # crash: failed, with the journal's error
            assert (trials[tid]["status"], trials[tid]["tags"]["cohort.sweep.state"]) == \
                ("FAILED", "failed")
            assert trials[tid]["tags"]["cohort.sweep.error"] == \
                "exit status 3 (log: %s/trials/%d/log)" % (sweep_dir, tid)
        # silent: the numbers it did report are its history; failed for the missing metric.
        assert history(server, trials[2]["id"], "other") == \
            [(1, 0.05 ** 2 + 1.0), (2, 0.05 ** 2 + 0.5)]
        assert trials[2]["tags"]["cohort.sweep.error"].endswith(
            "trial 2 exited without reporting metric 'loss' (it reported: other)")
        # The sweep's best-so-far curve, one point per completed trial.
        assert history(server, parent["id"], "best_loss") == \
            [(1, 0.05 ** 2 + 0.5), (2, 0.05 ** 2 + 0.5)]
    finally:
        server.stop()


def test_stopped_sweep_goes_on_in_new_runs_of_the_same_sweep(tmp_path):
    server = TrackingServer(tmp_path)
    try:
        spec = write_spec(tmp_path, ASHA_SPEC.replace("workers: 2", "workers: 1")
                          .replace("trials: 9", "trials: 4"))
        sweep_dir = str(tmp_path / "s")
        env = sweep_env(tmp_path, 0.2)
        cmd = [COHORT, "sweep", spec, "--dir", sweep_dir, "--trial-timeout", "30",
               "--tracking", server.url]
        first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not runs(env["SWEEP_TEST_RUNS"]):
            time.sleep(0.02)  # polling for the first trial, with the deadline above
        assert subprocess.run(cmd + ["--stop"], env=env, timeout=30).returncode == 0
        out = first.communicate(timeout=60)[0].decode()
        assert first.returncode == 143, out
        interrupted = [r for r in by_role(sweep_runs(server, "asha-test"), "trial")
                       if r["tags"]["cohort.sweep.state"] == "interrupted"]
        assert interrupted and all(r["status"] == "KILLED" for r in interrupted)

        again = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=120)
        assert again.returncode == 0, again.stdout.decode()
        found = sweep_runs(server, "asha-test")
        first_parent, second_parent = sorted(by_role(found, "sweep"), key=lambda r: r["name"])
        assert (first_parent["name"], first_parent["status"]) == ("asha-test", "KILLED")
        assert (second_parent["name"], second_parent["status"]) == \
            ("asha-test (continued)", "FINISHED")
        assert second_parent["tags"]["cohort.sweep.id"] == first_parent["id"]
        trials = by_role(found, "trial")
        assert {r["tags"]["cohort.sweep.id"] for r in trials} == {first_parent["id"]}
        assert {r["tags"]["cohort.sweep.trial"] for r in trials} == {"0", "1", "2", "3"}
        # The rungs of each trial's bracket, kept across the restart through the journal.
        assert {r["tags"]["cohort.sweep.rungs"] for r in trials} == {"1,3,9"}
        for old in interrupted:  # each interrupted trial went on in one new run
            [new] = [r for r in trials if r["tags"].get("cohort.sweep.resumed_from") == old["id"]]
            assert new["tags"]["cohort.sweep.trial"] == old["tags"]["cohort.sweep.trial"]
            assert new["tags"]["mlflow.parentRunId"] == second_parent["id"]
        # One run per trial and controller: a trial paused and resumed by ASHA
        # within one controller kept its run.
        records = journal(sweep_dir)
        run_records = [r for r in records if r["op"] == "run" and "trial" in r]
        assert len(run_records) == len(trials) == 4 + len(interrupted)
        assert all(r["rungs"] == "1,3,9" for r in run_records)
        for r in trials:
            tid = int(r["tags"]["cohort.sweep.trial"])
            if r["tags"]["cohort.sweep.state"] == "interrupted":
                continue
            steps = [s for s, _ in history(server, r["id"], "loss")]
            assert steps == sorted(steps) and steps, (tid, steps)
            assert r["status"] == ("FINISHED" if r["tags"]["cohort.sweep.state"] == "completed"
                                   else "KILLED")
    finally:
        server.stop()


def test_unreachable_server_and_sqlite_store_are_refused_by_name(tmp_path):
    spec = write_spec(tmp_path, FAIL_SPEC)

    def sweep(*extra, **env):
        return subprocess.run([COHORT, "sweep", spec, "--dir", str(tmp_path / "s"), *extra],
                              env=dict(sweep_env(tmp_path, 0), **env), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60)
    out = sweep("--tracking", "http://127.0.0.1:1")  # nothing listens on port 1
    assert out.returncode == 1
    assert out.stderr.decode().startswith(
        "cohort sweep: tracking http://127.0.0.1:1: GET http://127.0.0.1:1/api/2.0/mlflow/"
        "experiments/get-by-name?experiment_name=fail-test: Failed to connect"), out.stderr
    assert not os.path.exists(tmp_path / "runs.jsonl")  # no trial started
    db = "sqlite:%s/t.db" % tmp_path
    advice = ("a local SQLite store holds one run at a time and a sweep keeps one open per "
              "trial: serve it with `cohort server --store %s` and give --tracking "
              "http://HOST:PORT\n" % db)
    out = sweep("--tracking", db)
    assert (out.returncode, out.stderr.decode()) == (2, "cohort sweep: --tracking %s: " % db + advice)
    # From the environment (where it may be meant for the trials' own runs): a note, and the
    # sweep runs without recording.
    out = sweep(COHORT_TRACKING_URI=db)
    assert out.returncode == 0, out.stderr
    assert out.stderr.decode() == \
        "cohort sweep: not recording the trials in COHORT_TRACKING_URI=%s: " % db + advice
    assert not any(r["op"] == "run" for r in journal(str(tmp_path / "s")))
