"""Browser tests of the dashboard's sweep page: a real `cohort sweep --tracking`
(ASHA, stopped once and continued, so it has two sweep runs and trials started
again in new runs; Hyperband for its brackets; PBT for its lineage) against `cohort server` on
loopback with tests/python/sweep_trial.py as the trial, then tests/web/sweep_page_test.mjs
in headless chromium checks the page against what the sweep's journal says
happened (values, decisions) and what the store holds (states); a third,
slow sweep runs meanwhile, and its page must follow it to the end.
SWEEP_PAGE_SCREENSHOT=PATH also saves a full-page screenshot of the ASHA sweep,
SWEEP_PAGE_PBT_SCREENSHOT=PATH one of the PBT sweep."""
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from tracking_server_fixture import TrackingServer  # noqa: E402
from web_fixture import needs_browser, require_dashboard  # noqa: E402
from test_sweep import COHORT, journal, runs, sweep_env  # noqa: E402

import cohort.track  # noqa: E402

TRIAL = os.path.join(HERE, "..", "python", "sweep_trial.py")

SPEC = """name: %(name)s
command: [/usr/bin/python3, %(trial)s]
workers: 1
metric: {name: loss, mode: min}
algorithm: %(algorithm)s
budget: {trials: %(trials)d, concurrent: %(concurrent)d, min_resource: %(min)d, max_resource: %(max)d, reduction: 3}
seed: 7
parameters:
  x: {type: float, low: 0.0, high: 1.0}
  optimizer: {type: categorical, values: [sgd, adam]}
  behave: {type: categorical, values: [ok, ok, ok, ok, ok, crash]}
"""


def sweep_command(server, tmp_path, name, algorithm, trials, epoch_seconds, concurrent=3, resources=(1, 9)):
    """The `cohort sweep` command line and environment of a sweep named `name`
    (`resources`: min_resource and max_resource)."""
    work = tmp_path / name
    work.mkdir()
    spec = work / "spec.yaml"
    spec.write_text(SPEC % {"name": name, "trial": TRIAL, "algorithm": algorithm, "trials": trials,
                            "concurrent": concurrent, "min": resources[0], "max": resources[1]})
    cmd = [COHORT, "sweep", str(spec), "--dir", str(work / "s"), "--trial-timeout", "60",
           "--tracking", server.url]
    return cmd, sweep_env(work, epoch_seconds)


def run_sweep(server, tmp_path, name, algorithm, trials, epoch_seconds, stop_first=False, concurrent=3,
              resources=(1, 9)):
    """Runs the sweep to its end; returns its journal and the trials' runs.jsonl.
    stop_first: stop the controller as soon as a trial runs, then continue it
    (the sweep then has a "(continued)" run, and trials started again new runs)."""
    cmd, env = sweep_command(server, tmp_path, name, algorithm, trials, epoch_seconds, concurrent, resources)
    if stop_first:
        first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not runs(env["SWEEP_TEST_RUNS"]):
            time.sleep(0.02)  # polling for the first trial, with the deadline above
        assert subprocess.run(cmd + ["--stop"], env=env, stdout=subprocess.PIPE, timeout=30).returncode == 0
        out = first.communicate(timeout=60)[0].decode()
        assert first.returncode == 143, out
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=150)
    assert out.returncode == 0, out.stdout.decode()
    sweep_dir = os.path.join(os.path.dirname(env["SWEEP_TEST_RUNS"]), "s")
    return journal(sweep_dir), runs(env["SWEEP_TEST_RUNS"])


def start_live_sweep(server, tmp_path):
    """A slow random sweep left running (3 trials one at a time, 9 epochs of
    0.4 s each) for the page's refresh; returns the controller's process and,
    once the store has it, the sweep's run id."""
    cmd, env = sweep_command(server, tmp_path, "sweep-live", "random", 3, 0.4, concurrent=1)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if server.get("experiments/get-by-name", experiment_name="sweep-live")[0] == 200:
            sweep = [r["info"]["run_id"] for r in store_runs(server, "sweep-live")
                     if {"key": "cohort.sweep.role", "value": "sweep"} in r["data"].get("tags", [])]
            if sweep:
                return proc, sweep[0]
        time.sleep(0.05)  # polling the store, with the deadline above
    proc.kill()
    raise AssertionError("the live sweep's run did not appear: " + proc.communicate()[0].decode())


def store_runs(server, project):
    status, body = server.get("experiments/get-by-name", experiment_name=project)
    assert status == 200, body
    status, body = server.post("runs/search", {"experiment_ids": [body["experiment"]["experiment_id"]],
                                               "max_results": 1000})
    assert status == 200, body
    return body.get("runs", [])  # MLflow leaves an empty list out


def store_trials(server, name):
    """{trial: (run id, state tag, status, rungs tag)} of the sweep's trials
    (their latest runs), and the sweep's runs, oldest first."""
    trials, sweep_runs = {}, []
    for r in sorted(store_runs(server, name), key=lambda r: r["info"]["start_time"]):
        tags = {t["key"]: t["value"] for t in r["data"].get("tags", [])}
        if tags.get("cohort.sweep.role") == "sweep":
            sweep_runs.append(r["info"]["run_id"])
        elif tags.get("cohort.sweep.role") == "trial":  # a trial's latest run wins
            trials[int(tags["cohort.sweep.trial"])] = (r["info"]["run_id"], tags["cohort.sweep.state"],
                                                       r["info"]["status"], tags.get("cohort.sweep.rungs"))
    return trials, sweep_runs


def reports_by_trial(records):
    out = {}
    for r in records:
        if r["op"] == "report":
            out.setdefault(r["trial"], []).append(r)
    return out


def expected_rungs(records, rungs):
    """Per rung resource, [trial, value, outcome] best first, from the journal's
    reports and decisions: the trial reports every step, so a rung is reached by
    its first report at exactly the rung's resource (one started again from
    scratch after a restart reports low steps twice), and promoted when it
    reported anything after that."""
    out = {}
    for resource in rungs:
        entries = []
        for trial, rs in reports_by_trial(records).items():
            at = [i for i, r in enumerate(rs) if r["step"] == resource]
            if not at:
                continue
            report = rs[at[0]]
            outcome = ("promoted" if at[0] < len(rs) - 1 else
                       {"stop": "completed", "pause": "paused", "continue": "promoted"}[report["decision"]])
            entries.append([trial, report["value"], outcome])
        out[str(resource)] = sorted(entries, key=lambda e: (e[1], e[0]))
    return out


def expectations(server, name, records):
    trials, sweep_runs = store_trials(server, name)
    reports = reports_by_trial(records)
    rows = {}
    for t, (run_id, state, status, _) in trials.items():
        values = [r["value"] for r in reports.get(t, [])]  # in the order reported
        rows[str(t)] = {"run": run_id, "state": state, "status": status,
                        "last": values[-1] if values else None, "best": min(values) if values else None,
                        "steps": max(r["step"] for r in reports[t]) if values else None}
    # ASHA completes a trial by its "stop" at the last rung, in this order.
    tells = [r["value"] for r in records if r["op"] == "report" and r["decision"] == "stop"]
    assert tells
    best = [min(tells[:i + 1]) for i in range(len(tells))]
    return {"sweep": sweep_runs[0], "sweep_runs": sweep_runs, "trials": rows, "finals": tells, "best": best}


def pbt_expectations(server, name, records, trial_runs):
    """The lineage as the controller told the trials (runs.jsonl: the checkpoint
    each replacement started from and its step), the best completed trial by
    the journal, and its line of ancestors (best first)."""
    trials, [sweep] = store_trials(server, name)
    parents = {}
    for r in trial_runs:
        if r["clone_from"]:
            m = re.search(r"/trials/(\d+)/checkpoint$", r["clone_from"])
            parents[r["trial"]] = (int(m.group(1)), r["start_step"])
    assert parents, "PBT exploited no trial"
    done = [(r["value"], r["trial"]) for r in records
            if r["op"] == "report" and r["decision"] == "stop" and r["step"] == 16]
    ancestry = [min(done)[1]]  # among equal values the lowest-numbered trial, as `cohort sweep`
    while ancestry[-1] in parents:
        ancestry.append(parents[ancestry[-1]][0])
    return {"sweep": sweep, "trials": len(trials), "ancestry": ancestry,
            "edges": sorted([p, c, step] for c, (p, step) in parents.items()),
            "runs": {str(t): run for t, (run, _, _, _) in trials.items()},
            "parents": {str(c): p for c, (p, _) in parents.items()}}


@needs_browser
def test_sweep_page_in_chromium(tmp_path):
    require_dashboard()
    server = TrackingServer(tmp_path)
    live = None
    try:
        asha_records, _ = run_sweep(server, tmp_path, "sweep-asha", "asha", 18, 0.2, stop_first=True)
        hb_records, hb_runs = run_sweep(server, tmp_path, "sweep-hb", "hyperband", 8, 0.01)
        # Exploits every 2 epochs of 16: a population of 6 and 18 replacements at most.
        pbt_records, pbt_runs = run_sweep(server, tmp_path, "sweep-pbt", "pbt", 24, 0.1, concurrent=6,
                                          resources=(2, 16))
        plain = cohort.track.init(project="sweep-asha", name="not-a-sweep", uri=server.url,
                                  system_metrics_s=None)
        plain.finish()

        asha = expectations(server, "sweep-asha", asha_records)
        asha["rungs"] = expected_rungs(asha_records, [1, 3, 9])
        asha["experiment"] = plain.experiment_id
        asha["plain"] = plain.id
        asha["runs"] = len(store_runs(server, "sweep-asha"))
        asha["trial_runs"] = sum(1 for r in store_runs(server, "sweep-asha")
                                 if any(t["key"] == "cohort.sweep.role" and t["value"] == "trial"
                                        for t in r["data"]["tags"]))
        assert len(asha["sweep_runs"]) == 2  # the first controller's and the continued one's
        assert asha["trial_runs"] > len(asha["trials"]), "no trial was started again in a new run"
        # Hyperband: a trial's bracket is where its first job started (runs.jsonl's resource).
        hb_trials, [hb_sweep] = store_trials(server, "sweep-hb")
        first = {}
        for r in hb_runs:
            first.setdefault(r["trial"], r["resource"])
        rungs = {1: "1,3,9", 3: "3,9", 9: "9"}
        for t, (_, _, _, tag) in hb_trials.items():
            assert tag == rungs[first[t]], (t, tag, first[t])
        hb = {"sweep": hb_sweep,
              "brackets": sorted(rungs[r] for r in set(first[t] for t in hb_trials)),
              "reached": sum(1 for r in hb_records if r["op"] == "report" and
                             r["step"] in (1, 3, 9) and str(r["step"]) in rungs[first[r["trial"]]].split(","))}
        live, live_sweep = start_live_sweep(server, tmp_path)
        expect = tmp_path / "expect.json"
        pbt = pbt_expectations(server, "sweep-pbt", pbt_records, pbt_runs)
        expect.write_text(json.dumps({"asha": asha, "hyperband": hb, "pbt": pbt,
                                      "live": {"sweep": live_sweep, "trials": 3}}))
        env = dict(os.environ, DASH_URL=server.url, DASH_EXPECT=str(expect),
                   DASH_SCREENSHOT=os.environ.get("SWEEP_PAGE_SCREENSHOT", ""),
                   DASH_SCREENSHOT_PBT=os.environ.get("SWEEP_PAGE_PBT_SCREENSHOT", ""))
        result = subprocess.run(["node", os.path.join(HERE, "sweep_page_test.mjs")], env=env,
                                capture_output=True, text=True, timeout=120)
        print(result.stdout)
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.count("ok ") == 10
        assert live.wait(timeout=60) == 0
    finally:
        if live is not None and live.poll() is None:
            live.kill()
            live.wait(timeout=30)
        server.stop()
