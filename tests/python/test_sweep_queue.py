"""`cohort sweep --queue`: trials as jobs of a `cohort server` queue on
loopback (its own host's slots): the same results as on this host, jobs at low
priority in the sweep's project, a normal job going first (and preempting a
trial, which comes back and finishes), a controller killed with kill -9 and
started again following its jobs instead of submitting them twice, a stopped
controller cancelling its jobs, failing trials with the job's reason, trials
on a `cohort agent` of this host, and bad input (an unreachable queue, a bad
priority, a gang larger than the pool)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from tracking_server_fixture import TrackingServer  # noqa: E402
from test_sweep import COHORT, FAIL_SPEC, journal, runs, sweep_env, write_spec  # noqa: E402
from test_sweep_tracking import by_role, sweep_runs  # noqa: E402

DEADLINE_S = 90

# Three epochs of a trial, reported each: a plain sampler (every report continues).
SLOW_SPEC = """name: slow-test
command: [/usr/bin/python3, %s]
workers: 1
metric: {name: loss, mode: min}
algorithm: random
budget: {trials: %d, concurrent: 2, max_resource: 3}
seed: 1
parameters:
  x: {type: float, low: 0.0, high: 1.0}
"""


def slow_spec(tmp_path, trials):
    return write_spec(tmp_path, SLOW_SPEC % (os.path.join(HERE, "sweep_trial.py"), trials))


def start_server(tmp_path, slots):
    return TrackingServer(tmp_path, ["--slots", str(slots), "--grace", "1"])


def queue_headers(server):
    """The queue's token, which the server writes beside its queue database
    (docs/security.md)."""
    path = os.path.join(os.path.dirname(server.store[len("sqlite:"):]), "queue-token")
    with open(path) as f:
        return {"X-Cohort-Queue-Token": f.read().strip()}


def queue_jobs(server):
    status, body = server.request("GET", "/api/queue/jobs", headers=queue_headers(server))
    assert status == 200, body
    return {j["id"]: j for j in body["jobs"]}


def job_records(sweep_dir):
    return [r for r in journal(sweep_dir) if r["op"] == "job"]


def wait_until(what, condition):
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, "never: " + what
        time.sleep(0.05)


def sweep(spec, sweep_dir, env, *args, timeout=DEADLINE_S):
    p = subprocess.run([COHORT, "sweep", spec, "--dir", sweep_dir, *args], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def outcome(sweep_dir):
    """{trial: value} of the told trials and {trial: error} of the failed ones."""
    records = journal(sweep_dir)
    return ({r["trial"]: r["value"] for r in records if r["op"] == "tell"},
            {r["trial"]: r["error"] for r in records if r["op"] == "fail"})


def start_sweep(tmp_path, server, trials, env, reporting, extra=()):
    """A queued sweep of SLOW_SPEC in the background, once `reporting` of its
    trials have reported: (spec, sweep_dir, cmd, process)."""
    spec = slow_spec(tmp_path, trials)
    sweep_dir = str(tmp_path / "s")
    cmd = [COHORT, "sweep", spec, "--dir", sweep_dir, "--queue", server.url, *extra]
    process = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def reported():
        if not any(os.path.exists(os.path.join(sweep_dir, f)) for f in ("journal", "journal.store")):
            return False
        return len({r["trial"] for r in journal(sweep_dir) if r["op"] == "report"}) >= reporting
    wait_until("%d trials report" % reporting, reported)
    return spec, sweep_dir, cmd, process


@pytest.fixture
def server(tmp_path):
    s = start_server(tmp_path, 2)
    yield s
    s.stop()


def test_trials_run_as_low_priority_jobs_with_the_same_results(server, tmp_path):
    spec = write_spec(tmp_path, FAIL_SPEC)
    env = sweep_env(tmp_path, 0)
    local_dir, queued_dir = str(tmp_path / "local"), str(tmp_path / "queued")
    rc, out, err = sweep(spec, local_dir, env)
    assert rc == 0, out + err
    rc, out, err = sweep(spec, queued_dir, env, "--queue", server.url, "--trial-timeout", "60")
    assert rc == 0, out + err
    local_tells, local_fails = outcome(local_dir)
    tells, fails = outcome(queued_dir)
    assert tells == pytest.approx(local_tells) and sorted(tells) == [0, 3]
    assert sorted(fails) == sorted(local_fails) == [1, 2, 4, 5]
    # One job per trial, each a gang of `workers` slots at low priority in the sweep's project.
    jobs = queue_jobs(server)
    recorded = {r["trial"]: r["job"] for r in job_records(queued_dir)}
    assert sorted(recorded) == list(range(6)) and sorted(recorded.values()) == sorted(jobs)
    for trial, job_id in recorded.items():
        j = jobs[job_id]
        assert (j["priority"], j["project"], j["slots"]) == ("low", "fail-test", 1)
        assert j["max_time"] == 60
        assert j["command"][1:5] == ["run", "-np", "1", "--"]
        assert j["state"] == ("failed" if trial in (1, 4) else "succeeded")
        assert f"cohort sweep: trial {trial} started" in out and f"as job {job_id}" in out
    # A trial whose command fails: the job's reason, and its log copied into the trial's.
    assert fails[1] == "job %d failed: exit status 3 (log: %s/trials/1/log)" % (
        recorded[1], queued_dir)
    with open(os.path.join(queued_dir, "trials", "1", "log")) as f:
        assert "cohort sweep: the log of queue job %d:" % recorded[1] in f.read()
    assert fails[2] == local_fails[2]  # exited 0 without reporting the metric
    # `cohort queue --json` shows the same.
    listed = json.loads(subprocess.run(
        [COHORT, "queue", "--json"], env=dict(os.environ, COHORT_SERVER=server.url),
        stdout=subprocess.PIPE, check=True, timeout=30).stdout)
    assert {j["id"] for j in listed} == set(recorded.values())
    assert {(j["priority"], j["project"]) for j in listed} == {("low", "fail-test")}


def test_a_normal_job_goes_before_waiting_trials_and_a_preempted_trial_resumes(tmp_path):
    server = start_server(tmp_path, 1)
    try:
        spec = slow_spec(tmp_path, 2)
        sweep_dir = str(tmp_path / "s")
        env = sweep_env(tmp_path, 1.5)  # trial 0 still runs when the normal job comes
        first = subprocess.Popen([COHORT, "sweep", spec, "--dir", sweep_dir, "--queue",
                                  server.url], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT)

        def trial_jobs():
            if not any(os.path.exists(os.path.join(sweep_dir, f)) for f in ("journal", "journal.store")):
                return {}
            return {r["trial"]: r["job"] for r in job_records(sweep_dir)}
        wait_until("two trials submitted", lambda: len(trial_jobs()) == 2)
        jobs = trial_jobs()
        wait_until("trial 0 reports", lambda: any(
            r["op"] == "report" and r["trial"] == 0 for r in journal(sweep_dir)))
        assert queue_jobs(server)[jobs[1]]["state"] == "pending"
        normal = subprocess.run([COHORT, "submit", "--", "true"], stdout=subprocess.PIPE,
                                env=dict(os.environ, COHORT_SERVER=server.url), check=True,
                                timeout=30)
        normal_id = int(normal.stdout)
        out = first.communicate(timeout=DEADLINE_S)[0].decode()
        assert first.returncode == 0, out
        listed = queue_jobs(server)
        assert listed[normal_id]["state"] == "succeeded"
        assert listed[normal_id]["started"] <= listed[jobs[1]]["started"]
        # The running trial gave way (preempted, requeued) and finished on its return.
        assert listed[jobs[0]]["restarts"] == 1 and listed[jobs[0]]["state"] == "succeeded"
        assert ("cohort sweep: trial 0: job %d was preempted; it resumes from its checkpoint "
                "when the queue starts it again" % jobs[0]) in out
        tells, fails = outcome(sweep_dir)
        assert sorted(tells) == [0, 1] and not fails
        starts = [r for r in runs(env["SWEEP_TEST_RUNS"]) if r["trial"] == 0]
        assert len(starts) == 2  # started, preempted, started again
    finally:
        server.stop()


def test_killed_controller_follows_its_jobs_again(server, tmp_path):
    # Recorded in the same server's tracking store: followed trials go on in new runs.
    env = dict(sweep_env(tmp_path, 0.5), COHORT_TRACKING_URI=server.url)
    spec, sweep_dir, cmd, first = start_sweep(tmp_path, server, 3, env, reporting=1)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    before = job_records(sweep_dir)
    assert before, "no job recorded"
    # Without --queue the restart would run those trials twice: refused.
    rc, out, err = sweep(spec, sweep_dir, env)
    assert rc == 1
    j = before[0]
    assert err == ("cohort sweep: trial %d runs as job %d of the queue at %s: continue with "
                   "--queue %s (or cancel the job first: COHORT_SERVER=%s cohort cancel %d)\n"
                   % (j["trial"], j["job"], server.url, server.url, server.url, j["job"]))
    rc, out, err = sweep(spec, sweep_dir, env, "--queue", server.url)
    assert rc == 0, out + err
    assert "cohort sweep: continuing 'slow-test'" in out
    records = job_records(sweep_dir)
    jobs = queue_jobs(server)
    # One job per trial, however the kill fell: none submitted twice.
    assert sorted(r["trial"] for r in records) == [0, 1, 2]
    assert sorted(r["job"] for r in records) == sorted(jobs)
    for r in before:
        assert f"cohort sweep: trial {r['trial']}: following job {r['job']} again" in out
    tells, fails = outcome(sweep_dir)
    assert sorted(tells) == [0, 1, 2] and not fails, (tells, fails, out)
    assert {j["state"] for j in jobs.values()} == {"succeeded"}
    trials = by_role(sweep_runs(server, "slow-test"), "trial")
    finished = {int(r["tags"]["cohort.sweep.trial"]) for r in trials if r["status"] == "FINISHED"}
    assert finished == {0, 1, 2}
    for r in before:
        [resumed] = [t for t in trials if t["tags"]["cohort.sweep.trial"] == str(r["trial"]) and
                     "cohort.sweep.resumed_from" in t["tags"]]
        assert resumed["status"] == "FINISHED"


def test_jobs_that_ended_without_a_controller_are_accounted(server, tmp_path):
    # Trials give up on a gone controller at once: their jobs fail meanwhile.
    env = dict(sweep_env(tmp_path, 0.5), COHORT_SWEEP_RECONNECT_S="0")
    spec, sweep_dir, cmd, first = start_sweep(tmp_path, server, 2, env, reporting=2)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    before = {r["trial"]: r["job"] for r in job_records(sweep_dir)}
    wait_until("the jobs end", lambda: all(
        queue_jobs(server)[j]["state"] == "failed" for j in before.values()))
    rc, out, err = sweep(spec, sweep_dir, env, "--queue", server.url)
    # Every trial failed: the sweep says so and exits 1 (docs/sweeps.md).
    assert rc == 1, out + err
    assert ("cohort sweep: every trial failed (2 of 2); trial 0: job %d failed: exit status 1"
            % before[0]) in out, out
    tells, fails = outcome(sweep_dir)
    assert not tells and sorted(fails) == [0, 1]
    for trial, job_id in before.items():
        assert fails[trial] == "job %d failed: exit status 1 (log: %s/trials/%d/log)" % (
            job_id, sweep_dir, trial)
        with open(os.path.join(sweep_dir, "trials", str(trial), "log")) as f:
            assert "cannot reach the sweep controller" in f.read()
    assert len(queue_jobs(server)) == 2  # nothing submitted again


def test_stopped_controller_cancels_its_jobs_and_continues(server, tmp_path):
    env = sweep_env(tmp_path, 0.5)
    spec, sweep_dir, cmd, first = start_sweep(tmp_path, server, 2, env, reporting=1,
                                              extra=["--priority", "normal", "--project", "vis"])
    assert subprocess.run(cmd + ["--stop"], env=env, timeout=30).returncode == 0
    out = first.communicate(timeout=DEADLINE_S)[0].decode()
    assert first.returncode == 143, out
    stopped = [r for r in job_records(sweep_dir) if r.get("stopping")]
    assert stopped
    jobs = queue_jobs(server)
    for r in stopped:
        assert jobs[r["job"]]["state"] == "cancelled"
    rc, out, err = sweep(spec, sweep_dir, env, "--queue", server.url)
    assert rc == 0, out + err
    tells, fails = outcome(sweep_dir)
    assert sorted(tells) == [0, 1] and not fails
    before = {r["job"] for r in job_records(sweep_dir) if r.get("stopping")}
    assert {(j["priority"], j["project"]) for i, j in queue_jobs(server).items()
            if i in before} == {("normal", "vis")}
    # The cancelled trials ran again as new jobs.
    for r in stopped:
        assert len([x for x in job_records(sweep_dir)
                    if x["trial"] == r["trial"] and not x.get("stopping")]) == 2


def test_trials_on_an_agent_of_this_host_report_to_the_controller(tmp_path):
    server = TrackingServer(tmp_path, ["--slots", "0", "--grace", "1"])
    agent = subprocess.Popen([COHORT, "agent", "--slots", "2", "--name", "here", "--heartbeat",
                              "0.2", "--work-dir", str(tmp_path / "agent")],
                             env=dict(os.environ, COHORT_SERVER=server.url),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # The pool has the agent's slots only once it heartbeats: a trial
        # submitted before would be refused for a pool of 0 slots.
        wait_until("agent 'here' heartbeats", lambda: any(
            a["name"] == "here" and a["alive"]
            for a in server.request("GET", "/api/queue/agents", headers=queue_headers(server))[1]["agents"]))
        spec = write_spec(tmp_path, (SLOW_SPEC % (os.path.join(HERE, "sweep_trial.py"), 2))
                          .replace("workers: 1", "workers: 2"))
        sweep_dir = str(tmp_path / "s")
        rc, out, err = sweep(spec, sweep_dir, sweep_env(tmp_path, 0), "--queue", server.url)
        assert rc == 0, out + err
        tells, fails = outcome(sweep_dir)
        assert sorted(tells) == [0, 1] and not fails
        jobs = queue_jobs(server)
        assert {(j["host"], j["slots"], j["state"]) for j in jobs.values()} == {
            ("here", 2, "succeeded")}
    finally:
        agent.kill()
        agent.wait(timeout=10)
        server.stop()


def test_bad_queue_input_is_refused_with_a_clear_message(server, tmp_path):
    spec = slow_spec(tmp_path, 1)
    env = sweep_env(tmp_path, 0)
    d = str(tmp_path / "s")
    rc, out, err = sweep(spec, d, env, "--queue", server.url, "--priority", "bogus")
    assert rc == 2 and err.startswith(
        "cohort sweep: --priority: unknown priority 'bogus' (expected high, normal or low)\n")
    rc, out, err = sweep(spec, d, env, "--priority", "high")
    assert rc == 2 and err.startswith(
        "cohort sweep: --priority and --project are for trials in a queue: add --queue URL\n")
    rc, out, err = sweep(spec, d, env, "--queue", "http://127.0.0.1:1")
    assert rc == 1 and err.startswith(
        "cohort sweep: cannot reach the queue at http://127.0.0.1:1 (--queue): "), err
    assert journal(d) == []  # refused before the sweep started
    # A gang larger than the pool: refused by the queue, named by the sweep.
    big = write_spec(tmp_path, open(spec).read().replace("workers: 1", "workers: 3"))
    rc, out, err = sweep(big, str(tmp_path / "big"), env, "--queue", server.url)
    assert rc == 1
    assert err == ("cohort sweep: trial 0: the queue at %s refused the job: the job asks for 3 "
                   "slots but pool 'default' has 2 slots\n" % server.url)
