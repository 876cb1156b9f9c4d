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
import re  # noqa: E402
import signal  # noqa: E402


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


def tracked_sweep(tmp_path, server, spec_text, epoch_seconds):
    """The sweep directory, environment and `cohort sweep --tracking` command of a spec."""
    spec = write_spec(tmp_path, spec_text)
    sweep_dir = str(tmp_path / "s")
    cmd = [COHORT, "sweep", spec, "--dir", sweep_dir, "--trial-timeout", "30",
           "--tracking", server.url]
    return sweep_dir, sweep_env(tmp_path, epoch_seconds), cmd


def stop_once(cmd, env, ready):
    """Runs the controller and stops it with --stop as soon as ready() holds."""
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and first.poll() is None and not ready():
        time.sleep(0.02)  # polling the trials' runs.jsonl, with the deadline above
    stop = subprocess.run(cmd + ["--stop"], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=30)
    out = first.communicate(timeout=60)[0].decode()
    assert stop.returncode == 0, stop.stdout.decode() + out
    assert first.returncode == 143, out


def test_stopped_sweep_goes_on_in_new_runs_of_the_same_sweep(tmp_path):
    server = TrackingServer(tmp_path)
    try:
        spec = ASHA_SPEC.replace("workers: 2", "workers: 1").replace("trials: 9", "trials: 4")
        sweep_dir, env, cmd = tracked_sweep(tmp_path, server, spec, 0.2)
        stop_once(cmd, env, lambda: runs(env["SWEEP_TEST_RUNS"]))  # as the first trial starts
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


def test_journal_in_the_store_survives_kill_9_without_any_journal_file(tmp_path):
    server = TrackingServer(tmp_path)
    try:
        spec = write_spec(tmp_path, ASHA_SPEC)
        sweep_dir = str(tmp_path / "s")
        env = sweep_env(tmp_path, 0.05)
        cmd = [COHORT, "sweep", spec, "--dir", sweep_dir, "--trial-timeout", "30",
               "--tracking", server.url]
        first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        pointer = os.path.join(sweep_dir, "journal.store")
        deadline = time.monotonic() + 60
        ended = []
        while time.monotonic() < deadline and first.poll() is None:
            if os.path.exists(pointer):
                ended = [r for r in journal(sweep_dir)
                         if r["op"] == "report" and r["decision"] != "continue"]
                if len(ended) >= 4:
                    break
            time.sleep(0.02)  # polling the store's journal, with the deadline above
        assert len(ended) >= 4, first.communicate()[0].decode()
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        before = journal(sweep_dir)
        done_before = {r["trial"] for r in before if r["op"] == "report" and
                       r["decision"] == "stop"}
        paused_before = {r["trial"] for r in before if r["op"] == "report" and
                         r["decision"] == "pause"}
        assert paused_before, "no trial was paused before the kill"
        runs_before = len(runs(env["SWEEP_TEST_RUNS"]))
        # Only the store holds the state: no journal file, only the trials' checkpoints.
        assert not os.path.exists(os.path.join(sweep_dir, "journal"))
        os.remove(pointer)
        assert os.path.isdir(os.path.join(sweep_dir, "trials"))

        second = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                timeout=120)
        out = second.stdout.decode()
        assert second.returncode == 0, out
        assert "cohort sweep: continuing 'asha-test'" in out
        assert not os.path.exists(os.path.join(sweep_dir, "journal"))
        records = journal(sweep_dir)  # the pointer is written again
        assert records[:len(before)] == before  # append-only
        assert {r["trial"] for r in records if r["op"] == "ask"} == set(range(9))
        # Every trial got its last word once: stopped at the top rung, or left paused.
        last = {}
        for r in records:
            if r["op"] == "report" and r["decision"] != "continue":
                last[r["trial"]] = (r["decision"], r["step"])
        assert sorted(last) == list(range(9))
        assert {d for d, _ in last.values()} <= {"stop", "pause"}
        after = runs(env["SWEEP_TEST_RUNS"])[runs_before:]
        assert not done_before & {r["trial"] for r in after}, "a finished trial ran again"
        stops = [r for r in records if r["op"] == "report" and r["decision"] == "stop"]
        assert len(stops) == len({r["trial"] for r in stops}) >= 1
        assert all(r["step"] == 9 for r in stops)
        resumed = [r for r in runs(env["SWEEP_TEST_RUNS"]) if r["start"] > 0 and r["rank"] == 0]
        assert resumed, "no paused trial was resumed from its checkpoint"
        for r in resumed:
            assert r["start"] in (1, 3) and r["resource"] in (3, 9)
        # The rungs: every trial's runs carry its bracket's, in the runs and the journal.
        trials = by_role(sweep_runs(server, "asha-test"), "trial")
        assert {r["tags"]["cohort.sweep.trial"] for r in trials} == {str(i) for i in range(9)}
        assert {r["tags"]["cohort.sweep.rungs"] for r in trials} == {"1,3,9"}
        assert all(r["rungs"] == "1,3,9" for r in records if r["op"] == "run" and "trial" in r)
        # Nothing the killed controller left open stays RUNNING: its sweep run, and
        # the runs of the trials it ran or had paused (KILLED, tagged interrupted).
        found = sweep_runs(server, "asha-test")
        assert [r["name"] for r in found if r["status"] == "RUNNING"] == []
        sweeps = by_role(found, "sweep")
        assert sorted(r["status"] for r in sweeps) == ["FINISHED", "KILLED"]
        interrupted = [r for r in trials if r["tags"]["cohort.sweep.state"] == "interrupted"]
        assert interrupted and all(r["status"] == "KILLED" for r in interrupted)
    finally:
        server.stop()


def test_a_file_journal_is_imported_once_and_both_journals_are_refused(tmp_path):
    server = TrackingServer(tmp_path)
    try:
        spec = write_spec(tmp_path, FAIL_SPEC)
        sweep_dir = str(tmp_path / "s")

        def sweep(*extra):
            p = subprocess.run([COHORT, "sweep", spec, "--dir", sweep_dir, *extra],
                               env=sweep_env(tmp_path, 0), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=120)
            return p.returncode, p.stdout.decode(), p.stderr.decode()
        rc, out, err = sweep()  # the embedded default: DIR/journal
        assert rc == 0, err
        file_records = journal(sweep_dir)
        runs_before = len(runs(str(tmp_path / "runs.jsonl")))
        rc, out, err = sweep("--tracking", server.url)
        assert rc == 0, err
        status, body = server.get("experiments/get-by-name", experiment_name="fail-test")
        eid = body["experiment"]["experiment_id"]
        store = (f"the journal of sweep 'fail-test' (experiment {eid}) in the tracking store at "
                 f"{server.url}")
        assert (f"cohort sweep: imported {len(file_records)} records of {sweep_dir}/journal into "
                f"{store} (the file is now {sweep_dir}/journal.imported)") in out
        assert "cohort sweep: continuing 'fail-test'" in out
        assert len(runs(str(tmp_path / "runs.jsonl"))) == runs_before  # nothing ran again
        assert not os.path.exists(os.path.join(sweep_dir, "journal"))
        assert journal(sweep_dir)[:len(file_records)] == file_records
        # Both a journal file and the store's journal: which is the truth is unknown.
        os.rename(os.path.join(sweep_dir, "journal.imported"), os.path.join(sweep_dir, "journal"))
        stored = len(journal(sweep_dir))
        rc, out, err = sweep("--tracking", server.url)
        assert rc == 1
        assert err == (f"cohort sweep: both {sweep_dir}/journal ({len(file_records)} records) and "
                       f"{store} ({stored} records) hold this sweep: move the file away to "
                       "continue from the store, or run without --tracking to continue from the "
                       "file\n")
    finally:
        server.stop()


def store_records(server, name):
    status, body = server.get("experiments/get-by-name", experiment_name=name)
    assert status == 200, body
    status, body = server.get("records", prefix="/api/cohort/sweeps/journal/",
                              experiment_id=body["experiment"]["experiment_id"], sweep=name)
    assert status == 200, body
    return [json.loads(r) for r in body["records"]]


def test_server_gone_at_an_append_stops_the_sweep_and_it_goes_on_later(tmp_path):
    server = TrackingServer(tmp_path)
    try:
        spec = write_spec(tmp_path, ASHA_SPEC)
        sweep_dir = str(tmp_path / "s")
        env = dict(sweep_env(tmp_path, 0.2), COHORT_SWEEP_JOURNAL_DEADLINE_S="1")
        cmd = [COHORT, "sweep", spec, "--dir", sweep_dir, "--trial-timeout", "30"]
        first = subprocess.Popen(cmd + ["--tracking", server.url], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and first.poll() is None:
            if os.path.exists(os.path.join(sweep_dir, "journal.store")) and \
                    sum(r["op"] == "report" for r in journal(sweep_dir)) >= 2:
                break
            time.sleep(0.02)  # polling the store's journal, with the deadline above
        server.stop()
        out = first.communicate(timeout=60)[0].decode()
        assert first.returncode == 1, out
        url = re.escape(server.url)
        assert re.search(r"\ncohort sweep: cannot append record \d+ to the journal of sweep "
                         r"'asha-test' \(experiment 1\) in the tracking store at %s \(tried for "
                         r"1 s\): POST %s/api/cohort/sweeps/journal/append: .*; the sweep stops "
                         r"with its state in the store: start it again when the server "
                         r"answers\n$" % (url, url), out), out
    finally:
        server.stop()
    server = TrackingServer(tmp_path)  # the same store, another port
    try:
        before = store_records(server, "asha-test")
        done_before = {r["trial"] for r in before if r["op"] == "report" and
                       r["decision"] == "stop"}
        runs_before = len(runs(env["SWEEP_TEST_RUNS"]))
        again = subprocess.run(cmd + ["--tracking", server.url], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=150)
        assert again.returncode == 0, again.stdout.decode()
        assert "cohort sweep: continuing 'asha-test'" in again.stdout.decode()
        records = store_records(server, "asha-test")
        assert records[:len(before)] == before
        assert {r["trial"] for r in records if r["op"] == "ask"} == set(range(9))
        after = runs(env["SWEEP_TEST_RUNS"])[runs_before:]
        assert not done_before & {r["trial"] for r in after}, "a finished trial ran again"
    finally:
        server.stop()


PBT_SPEC = """name: pbt-test
command: [/usr/bin/python3, %s]
workers: 1
metric: {name: loss, mode: min}
algorithm: pbt
budget: {trials: 10, concurrent: 4, min_resource: 2, max_resource: 16}
seed: 3
parameters:
  x: {type: float, low: 0.0, high: 1.0}
""" % os.path.join(HERE, "sweep_trial.py")


def test_pbt_replacements_carry_their_parent_and_step_across_a_restart(tmp_path):
    """Each PBT replacement's runs name the trial whose checkpoint it started
    from and that checkpoint's step (the dashboard's lineage), as the trial's
    environment had them; a replacement interrupted by --stop goes on in a new
    run with the same tags (the restarted controller has them from the journal)."""
    server = TrackingServer(tmp_path)
    try:
        sweep_dir, env, cmd = tracked_sweep(tmp_path, server, PBT_SPEC, 0.2)
        # Stopped as the first replacement starts.
        stop_once(cmd, env, lambda: any(r["clone_from"] for r in runs(env["SWEEP_TEST_RUNS"])))
        again = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=120)
        assert again.returncode == 0, again.stdout.decode()

        # What the controller told each trial: its parent's checkpoint and its step.
        told = {}
        for r in runs(env["SWEEP_TEST_RUNS"]):
            parent = None
            if r["clone_from"]:
                m = re.fullmatch(re.escape(sweep_dir) + r"/trials/(\d+)/checkpoint",
                                 r["clone_from"])
                assert m, r["clone_from"]
                parent = (m.group(1), str(r["start_step"]))
            assert told.setdefault(r["trial"], parent) == parent, r  # the same when started again
        trials = by_role(sweep_runs(server, "pbt-test"), "trial")
        assert {int(r["tags"]["cohort.sweep.trial"]) for r in trials} == set(told)
        for r in trials:
            tags = r["tags"]
            got = (tags["cohort.sweep.clone_of"], tags["cohort.sweep.clone_step"]) \
                if "cohort.sweep.clone_of" in tags else None
            assert got == told[int(tags["cohort.sweep.trial"])], (tags, told)
        # A replacement started again after the stop: its new run keeps the tags.
        again_runs = [r for r in trials if "cohort.sweep.resumed_from" in r["tags"] and
                      "cohort.sweep.clone_of" in r["tags"]]
        assert again_runs, "no replacement was running at the stop"
        # The k-th replacement asked for is the k-th exploit (a "stop" before the
        # end): its step is the parent's latest report at that decision.
        records = journal(sweep_dir)
        exploits = [i for i, r in enumerate(records)
                    if r["op"] == "report" and r["decision"] == "stop" and r["step"] < 16]
        asked = [r["trial"] for r in records if r["op"] == "ask" and told[r["trial"]]]
        assert len(asked) == len(exploits) > 0
        assert set(asked) == {t for t, parent in told.items() if parent}
        for tid, at in zip(asked, exploits):
            parent, step = told[tid]
            steps = [r["step"] for r in records[:at] if r["op"] == "report" and
                     r["trial"] == int(parent)]
            assert int(step) == steps[-1], (tid, told[tid], steps)
    finally:
        server.stop()
