"""cohort.sweep: the ask/tell Study over the C++ algorithms, and `cohort sweep`
end to end (pause/resume, a killed controller, --stop, failing trials,
--rerun-best, --extend, bad specs)."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from cohort import sweep  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))
COHORT = os.path.join(BUILD, "cohort")

SPACE = {
    "lr": {"type": "float", "low": 1e-4, "high": 1.0, "log": True},
    "momentum": {"type": "float", "low": 0.0, "high": 0.99, "when": {"optimizer": "sgd"}},
    "optimizer": {"type": "categorical", "values": ["sgd", "adam"]},
    "layers": {"type": "int", "low": 1, "high": 4},
}


def test_ask_tell_finds_a_good_value_and_respects_conditions():
    study = sweep.Study(parameters=SPACE, algorithm="tpe", mode="min", seed=0,
                        budget={"trials": 40})
    n = 0
    while (trial := study.ask()) is not None:
        p = trial.params
        assert ("momentum" in p) == (p["optimizer"] == "sgd")
        assert isinstance(p["layers"], int) and 1 <= p["layers"] <= 4
        study.tell(trial, abs(p["lr"] - 0.01) + p["layers"])
        n += 1
    assert n == 40
    assert study.finished
    assert study.best.params["layers"] == 1
    assert study.best.value == min(t.value for t in study.trials)


def test_same_seed_same_trials():
    def run(seed):
        s = sweep.Study(parameters=SPACE, algorithm="random", seed=seed, budget={"trials": 5})
        return [s.ask().params for _ in range(5)]
    assert run(1) == run(1)
    assert run(1) != run(2)


def test_asha_pauses_and_resumes_through_report():
    study = sweep.Study(parameters={"x": {"type": "float", "low": 0, "high": 1}},
                        algorithm="asha", mode="max", budget={"trials": 3, "min_resource": 1,
                                                              "max_resource": 3, "reduction": 3})
    trials = [study.ask() for _ in range(3)]
    assert [study.report(t, v, 1) for t, v in zip(trials, [0.5, 0.9, 0.1])] == ["pause"] * 3
    resumed = study.ask()
    assert (resumed.id, resumed.resumed, resumed.resource) == (1, True, 3)
    assert study.report(resumed, 0.95, 3) == "stop"
    assert study.best.id == 1 and study.best.value == 0.95
    assert study.ask() is None and study.finished


def test_bad_arguments_raise_value_errors_naming_them():
    with pytest.raises(ValueError, match=r"^unknown algorithm 'bayes' \(grid, random, sobol, "
                                         r"tpe, asha, hyperband or pbt\)$"):
        sweep.Study(parameters=SPACE, algorithm="bayes")
    with pytest.raises(ValueError, match=r"^parameter 'x': low \(2\) > high \(1\)$"):
        sweep.Study(parameters={"x": {"type": "float", "low": 2, "high": 1}})
    with pytest.raises(ValueError, match=r"^parameters\['x'\]: unknown key 'hi'"):
        sweep.Study(parameters={"x": {"type": "float", "low": 0, "hi": 1}})
    with pytest.raises(ValueError, match=r"^parameter 'm': when: names unknown parameter 'opt'$"):
        sweep.Study(parameters={"m": {"type": "float", "low": 0, "high": 1, "when": {"opt": "a"}}})
    study = sweep.Study(parameters=SPACE)
    with pytest.raises(ValueError, match=r"^unknown trial 7 \(the study has 0 trials\)$"):
        study.tell(7, 1.0)
    with pytest.raises(RuntimeError, match="^COHORT_SWEEP_PARAMS is not set: this process is not a trial of `cohort sweep`$"):
        sweep.params()


def write_spec(tmp_path, text):
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return str(path)


def runs(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def journal(sweep_dir):
    """The sweep's journal records: from DIR/journal, or from the tracking
    store that DIR/journal.store names (`cohort sweep --tracking http://...`)."""
    pointer = os.path.join(sweep_dir, "journal.store")
    if os.path.exists(pointer):
        return store_journal(pointer)
    with open(os.path.join(sweep_dir, "journal")) as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


def store_journal(pointer):
    import urllib.parse
    import urllib.request
    with open(pointer) as f:
        where = json.loads(f.read())
    query = urllib.parse.urlencode({"experiment_id": where["experiment_id"], "sweep": where["sweep"]})
    url = where["uri"].rstrip("/") + "/api/cohort/sweeps/journal/records?" + query
    with urllib.request.urlopen(url, timeout=30) as resp:
        return [json.loads(r) for r in json.loads(resp.read())["records"]]


ASHA_SPEC = """name: asha-test
command: [/usr/bin/python3, %s]
workers: 2
metric: {name: loss, mode: min}
algorithm: asha
budget: {trials: 9, concurrent: 3, min_resource: 1, max_resource: 9, reduction: 3}
seed: 4
parameters:
  x: {type: float, low: 0.0, high: 1.0}
""" % os.path.join(HERE, "sweep_trial.py")


def sweep_env(tmp_path, epoch_seconds):
    env = dict(os.environ, SWEEP_TEST_RUNS=str(tmp_path / "runs.jsonl"),
               SWEEP_TEST_EPOCH_SECONDS=str(epoch_seconds),
               PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
    return env


def test_asha_sweep_survives_kill_9_of_its_controller(tmp_path):
    spec = write_spec(tmp_path, ASHA_SPEC)
    sweep_dir = str(tmp_path / "s")
    env = sweep_env(tmp_path, 0.05)
    cmd = [COHORT, "sweep", spec, "--dir", sweep_dir, "--trial-timeout", "30"]
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    ended = []
    while time.monotonic() < deadline and first.poll() is None:
        if os.path.exists(os.path.join(sweep_dir, "journal")):
            ended = [r for r in journal(sweep_dir)
                     if r["op"] == "report" and r["decision"] != "continue"]
            if len(ended) >= 4:
                break
        time.sleep(0.02)  # polling the journal, with the deadline above
    assert len(ended) >= 4, first.communicate()[0].decode()
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    before = journal(sweep_dir)
    done_before = {r["trial"] for r in before if r["op"] == "report" and r["decision"] == "stop"}
    runs_before = len(runs(env["SWEEP_TEST_RUNS"]))

    second = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            timeout=120)
    out = second.stdout.decode()
    assert second.returncode == 0, out
    assert "cohort sweep: continuing 'asha-test'" in out
    assert "best: trial" in out
    records = journal(sweep_dir)
    assert records[:len(before)] == before  # append-only
    new_trials = {r["trial"] for r in records if r["op"] == "ask"}
    assert new_trials == set(range(9))
    after = runs(env["SWEEP_TEST_RUNS"])[runs_before:]
    assert not done_before & {r["trial"] for r in after}, "a finished trial ran again"
    # Every trial reached rung 1; promoted ones resumed from their own checkpoint.
    stops = [r for r in records if r["op"] == "report" and r["decision"] == "stop"]
    assert len(stops) == len({r["trial"] for r in stops}) >= 1
    for r in stops:
        assert r["step"] == 9
    resumed = [r for r in runs(env["SWEEP_TEST_RUNS"]) if r["start"] > 0 and r["rank"] == 0]
    assert resumed, "no paused trial was resumed from its checkpoint"
    for r in resumed:
        assert r["start"] in (1, 3) and r["resource"] in (3, 9)


FAIL_SPEC = """name: fail-test
command: /usr/bin/python3 %s
metric: {name: loss, mode: min}
algorithm: grid
budget: {trials: 10, concurrent: 2, min_resource: 1, max_resource: 2}
parameters:
  x: {type: categorical, values: [0.25, 0.5]}
  behave: {type: categorical, values: [ok, crash, silent]}
""" % os.path.join(HERE, "sweep_trial.py")


def test_failing_trials_are_recorded_and_the_sweep_goes_on(tmp_path):
    spec = write_spec(tmp_path, FAIL_SPEC)
    sweep_dir = str(tmp_path / "s")
    out = subprocess.run([COHORT, "sweep", spec, "--dir", sweep_dir], env=sweep_env(tmp_path, 0),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    text = out.stdout.decode()
    assert out.returncode == 0, text
    fails = {r["trial"]: r["error"] for r in journal(sweep_dir) if r["op"] == "fail"}
    tells = {r["trial"]: r["value"] for r in journal(sweep_dir) if r["op"] == "tell"}
    # The grid: (0.25, ok) (0.25, crash) (0.25, silent) (0.5, ok) (0.5, crash) (0.5, silent).
    assert sorted(tells) == [0, 3]
    assert tells[0] == pytest.approx(0.05 ** 2 + 0.5)
    assert fails[1] == "exit status 3 (log: %s/trials/1/log)" % sweep_dir
    assert fails[2] == ("%s:3: metric.name: trial 2 exited without reporting metric 'loss' "
                        "(it reported: other)" % spec)
    assert "best: trial 0 loss=0.5025" in text
    # The metric the script never reports is named at its first report, once.
    warnings = [x for x in text.splitlines() if "cohort sweep: warning:" in x]
    assert [re.sub("trial [25] ", "trial N ", x) for x in warnings] == [
        "cohort sweep: warning: trial N reported {other} at step 1 without the metric 'loss' "
        "(%s:3: metric.name); a trial that ends without reporting it fails" % spec], text
    # The best trial once more, outside the study.
    again = subprocess.run([COHORT, "sweep", spec, "--dir", sweep_dir, "--rerun-best"],
                           env=sweep_env(tmp_path, 0), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
    assert again.returncode == 0, again.stdout.decode()
    assert "re-run of trial 0 exited 0, loss = 0.502500" in again.stdout.decode()
    # Extending a finished grid adds no trial: the grid is covered.
    more = subprocess.run([COHORT, "sweep", spec, "--dir", sweep_dir, "--extend", "3"],
                          env=sweep_env(tmp_path, 0), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=60)
    assert more.returncode == 0
    assert "cohort sweep: fail-test: 6 trials" in more.stdout.decode()


def test_a_sweep_whose_every_trial_failed_exits_1_with_the_first_reason(tmp_path):
    spec = write_spec(tmp_path, FAIL_SPEC.replace("fail-test", "all-fail").replace(
        "values: [ok, crash, silent]", "values: [crash, silent]"))
    sweep_dir = str(tmp_path / "s")
    out = subprocess.run([COHORT, "sweep", spec, "--dir", sweep_dir], env=sweep_env(tmp_path, 0),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    text = out.stdout.decode()
    assert out.returncode == 1, text
    assert ("cohort sweep: every trial failed (4 of 4); trial 0: exit status 3 (log: "
            "%s/trials/0/log)\n" % sweep_dir) in text, text


def test_bad_spec_names_line_and_key(tmp_path):
    spec = write_spec(tmp_path, ASHA_SPEC.replace("low: 0.0, high: 1.0", "low: 2.0, high: 1.0"))
    out = subprocess.run([COHORT, "sweep", spec], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=30)
    assert out.returncode == 1
    assert out.stderr.decode() == "cohort sweep: %s:9: parameters.x: low (2) > high (1)\n" % spec


def test_stop_then_continue(tmp_path):
    spec = write_spec(tmp_path, ASHA_SPEC.replace("workers: 2", "workers: 1")
                      .replace("trials: 9", "trials: 4"))
    sweep_dir = str(tmp_path / "s")
    env = sweep_env(tmp_path, 0.2)
    cmd = [COHORT, "sweep", spec, "--dir", sweep_dir, "--trial-timeout", "30"]
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not runs(env["SWEEP_TEST_RUNS"]):
        time.sleep(0.02)  # polling for the first trial, with the deadline above
    stop = subprocess.run(cmd + ["--stop"], env=env, stdout=subprocess.PIPE, timeout=30)
    assert stop.returncode == 0
    assert stop.stdout.decode().startswith("cohort sweep: asked the controller (pid %d) to stop"
                                           % first.pid)
    out = first.communicate(timeout=60)[0].decode()
    assert first.returncode == 143, out
    assert "cohort sweep: stopping (signal 15); run the same command to continue" in out
    again = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=120)
    assert again.returncode == 0, again.stdout.decode()
    assert "cohort sweep: continuing 'asha-test'" in again.stdout.decode()
    assert "cohort sweep: asha-test: 4 trials" in again.stdout.decode()
    assert {r["trial"] for r in journal(sweep_dir) if r["op"] == "ask"} == {0, 1, 2, 3}
