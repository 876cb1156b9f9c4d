"""The job queue in `cohort server`: cohort submit/queue/cancel/logs against a
live server on loopback; jobs run on the server's own host (--slots)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../server"))
from tracking_server_fixture import COHORT, TrackingServer  # noqa: E402

DEADLINE_S = 30


def start_server(tmp_path, slots=2, extra=()):
    return TrackingServer(tmp_path, ["--slots", str(slots), "--grace", "1", *extra])


def cli(server, *args, user="alice", token=None, cwd=None):
    env = dict(os.environ, COHORT_SERVER=server.url, USER=user)
    env.pop("COHORT_TRACKING_TOKEN", None)
    if token:
        env["COHORT_TRACKING_TOKEN"] = token
    p = subprocess.run([COHORT, *args], capture_output=True, text=True, timeout=DEADLINE_S,
                       env=env, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def submit(server, *args, **kw):
    rc, out, err = cli(server, "submit", *args, **kw)
    assert rc == 0, err
    return int(out)


def queue_headers(server):
    """The queue's token header: without --auth the server generates the token
    and writes it beside the queue's database (docs/security.md)."""
    path = os.path.join(os.path.dirname(server.store[len("sqlite:"):]), "queue-token")
    if not os.path.exists(path):  # a server with --auth, or of a build from before the token
        return {}
    with open(path) as f:
        return {"X-Cohort-Queue-Token": f.read().strip()}


def job(server, job_id, headers=None):
    status, body = server.request("GET", f"/api/queue/jobs/{job_id}",
                                  headers=headers or queue_headers(server))
    assert status == 200, body
    return body


def wait_for(server, job_id, states, headers=None):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        j = job(server, job_id, headers)
        if j["state"] in states:
            return j
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} never reached {states}: {j}")


def wait_file(path):
    deadline = time.monotonic() + DEADLINE_S
    while not os.path.exists(path):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def wait_file_holds(path, text):
    deadline = time.monotonic() + DEADLINE_S
    while not (os.path.exists(path) and open(path).read() == text):
        assert time.monotonic() < deadline, f"{path} never held {text!r}"
        time.sleep(0.05)


def gate(tmp_path, name="go"):
    """A command that waits until tmp_path/name exists (the test's gate)."""
    return ["sh", "-c", f"while [ ! -e {tmp_path}/{name} ]; do sleep 0.05; done; echo released"]


@pytest.fixture(autouse=True)
def open_gates(tmp_path):
    """Jobs outlive a server: a test that fails still lets its gated jobs end."""
    yield
    for name in ("go", "go2", "go-early"):
        (tmp_path / name).touch()


@pytest.fixture
def server(tmp_path):
    s = start_server(tmp_path)
    yield s
    s.stop()


def test_submit_runs_to_succeeded_and_failed(server, tmp_path):
    ok = submit(server, "--project", "vision", "--", "sh", "-c",
                'echo "job $COHORT_JOB_ID slots $COHORT_JOB_SLOTS in $(pwd)"; echo err >&2',
                cwd=tmp_path)
    bad = submit(server, "--", "sh", "-c", "exit 3")
    missing = submit(server, "--", "no-such-command-xyz")
    j = wait_for(server, ok, {"succeeded"})
    assert j["exit_code"] == 0 and j["user"] == "alice" and j["project"] == "vision"
    assert j["started"] >= j["submitted"] and j["finished"] >= j["started"]
    assert cli(server, "logs", str(ok)) == (0, f"job {ok} slots 1 in {tmp_path}\nerr\n", "")
    j = wait_for(server, bad, {"succeeded", "failed"})
    assert (j["state"], j["exit_code"], j["reason"]) == ("failed", 3, "exit status 3")
    j = wait_for(server, missing, {"succeeded", "failed"})
    assert (j["state"], j["exit_code"]) == ("failed", 127)
    assert "no-such-command-xyz: not found" in cli(server, "logs", str(missing))[1]
    rc, out, _ = cli(server, "queue", "--json")
    listed = {x["id"]: x for x in json.loads(out)}
    assert set(listed) == {ok, bad, missing}
    for field in ("id", "state", "slots", "priority", "user", "submitted", "started", "finished",
                  "reason", "position", "estimated_start"):
        assert field in listed[ok]
    rc, out, _ = cli(server, "queue")
    assert rc == 0 and out.splitlines()[0].split()[:3] == ["ID", "STATE", "USER"]


def test_too_many_slots_refused_with_pool_size(server):
    assert cli(server, "submit", "--slots", "3", "--", "true") == (
        1, "", "cohort submit: the job asks for 3 slots but pool 'default' has 2 slots\n")
    assert cli(server, "submit", "--pool", "gpu", "--", "true") == (
        1, "", "cohort submit: the job asks for 1 slots but pool 'gpu' has 0 slots\n")
    rc, _, err = cli(server, "submit", "--priority", "urgent", "--", "true")
    assert rc == 1 and "urgent" in err


def test_cancel_own_and_other_users_job(server, tmp_path):
    running = submit(server, "--slots", "2", "--", *gate(tmp_path))
    waiting = submit(server, "--", "true")
    wait_for(server, running, {"running"})
    assert cli(server, "cancel", str(running), user="bob") == (
        1, "", f"cohort cancel: job {running} belongs to alice; bob cannot cancel it\n")
    assert cli(server, "cancel", str(waiting)) == (0, f"cancelled job {waiting}\n", "")
    j = job(server, waiting)
    assert (j["state"], j["reason"], j["started"]) == ("cancelled", "cancelled by alice", None)
    assert cli(server, "cancel", str(running)) == (0, f"cancelled job {running}\n", "")
    j = wait_for(server, running, {"cancelled", "failed", "succeeded"})
    assert (j["state"], j["exit_code"]) == ("cancelled", 128 + signal.SIGTERM)
    assert cli(server, "cancel", str(running)) == (
        1, "", f"cohort cancel: job {running} already cancelled\n")
    assert cli(server, "cancel", "999") == (1, "", "cohort cancel: no job 999\n")


def test_cancel_under_auth_uses_the_tokens_user(tmp_path):
    store = ["--store", f"sqlite:{tmp_path}/tracking.db"]
    tokens = {}
    for name in ("alice", "bob"):
        subprocess.run([COHORT, "user", "add", name, *store], check=True, capture_output=True)
        tokens[name] = subprocess.run([COHORT, "token", "create", name, *store], check=True,
                                      capture_output=True, text=True).stdout.strip()
        subprocess.run([COHORT, "user", "grant", name, "--queue-project", "default", "submit",
                        *store], check=True, capture_output=True)
    s = start_server(tmp_path, extra=["--auth"])
    try:
        rc, _, err = cli(s, "submit", "--", "true")
        assert rc == 1 and "requires a token" in err
        # bob claims to be alice in $USER; the token says who he is.
        j = submit(s, "--", *gate(tmp_path), user="bob", token=tokens["bob"])
        wait_for(s, j, {"running"}, headers={"Authorization": "Bearer " + tokens["bob"]})
        assert cli(s, "cancel", str(j), user="bob", token=tokens["alice"]) == (
            1, "", f"cohort cancel: job {j} belongs to bob; alice cannot cancel it\n")
        assert cli(s, "cancel", str(j), user="alice", token=tokens["bob"])[0] == 0
    finally:
        s.stop()


def test_priorities_order_the_queue_and_preempt(tmp_path):
    s = start_server(tmp_path, slots=1)
    try:
        order = tmp_path / "order"
        record = ["sh", "-c", f"echo $COHORT_JOB_ID >> {order}"]
        blocker = submit(s, "--priority", "high", "--", *gate(tmp_path))
        wait_for(s, blocker, {"running"})
        low = submit(s, "--priority", "low", "--", *record)
        normal = submit(s, "--", *record)
        high = submit(s, "--priority", "high", "--", *record)
        deadline = time.monotonic() + DEADLINE_S
        while True:  # positions come from the next scheduling pass
            listed = {x["id"]: x for x in json.loads(cli(s, "queue", "--json")[1])}
            if all(listed[i]["position"] is not None for i in (low, normal, high)):
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert [listed[i]["position"] for i in (high, normal, low)] == [1, 2, 3]
        assert listed[normal]["reason"] != "" and listed[high]["estimated_start"] is not None
        (tmp_path / "go").touch()
        wait_for(s, low, {"succeeded"})
        assert order.read_text().split() == [str(high), str(normal), str(low)]

        # A high job takes the slot of a running low one: SIGTERM, requeue, resume.
        (tmp_path / "go").unlink()
        victim = submit(s, "--priority", "low", "--", "sh", "-c",
                        f"trap 'echo saved; exit 0' TERM; echo run $COHORT_JOB_RESTARTS; "
                        f"[ $COHORT_JOB_RESTARTS = 1 ] && exit 0; "
                        f"while true; do sleep 0.05; done")
        wait_file_holds(tmp_path / "queue-logs" / f"{victim}.log", "run 0\n")  # its trap is set
        urgent = submit(s, "--priority", "high", "--", "true")
        j = wait_for(s, victim, {"preempted"})
        assert j["restarts"] == 1 and "job " + str(urgent) in j["reason"]
        wait_for(s, urgent, {"succeeded"})
        j = wait_for(s, victim, {"succeeded"})
        lines = cli(s, "logs", str(victim))[1].splitlines()
        # sh reports the killed sleep as "Terminated".
        assert [x for x in lines if x != "Terminated"] == ["run 0", "saved", "run 1"]
    finally:
        s.stop()


def test_a_preempted_two_rank_job_saves_within_the_grace_and_resumes(tmp_path):
    # Each rank of a `cohort run -np 2` job needs 3 s after SIGTERM to write
    # its checkpoint: the queue's --grace (10 s) reaches cohort run through
    # COHORT_GRACE, so both save and the requeued job resumes from them.
    s = TrackingServer(tmp_path, ["--slots", "2", "--grace", "10"])
    try:
        script = ("if [ -e ckpt.$COHORT_RANK ]; then "
                  "echo resumed $COHORT_RANK from $(cat ckpt.$COHORT_RANK); exit 0; fi; "
                  "[ $COHORT_JOB_RESTARTS = 0 ] || { echo no checkpoint $COHORT_RANK; exit 1; }; "
                  "trap 'sleep 3; echo step-7 > ckpt.$COHORT_RANK; exit 0' TERM; "
                  "echo ready $COHORT_RANK; while true; do sleep 0.05; done")
        victim = submit(s, "--slots", "2", "--priority", "low", "--",
                        COHORT, "run", "-np", "2", "--", "sh", "-c", script, cwd=tmp_path)
        log = tmp_path / "queue-logs" / f"{victim}.log"
        deadline = time.monotonic() + DEADLINE_S
        while not (log.exists() and "[0] ready 0" in log.read_text()
                   and "[1] ready 1" in log.read_text()):
            assert time.monotonic() < deadline, "the job's ranks never started"
            time.sleep(0.05)
        urgent = submit(s, "--slots", "2", "--priority", "high", "--", "true")
        j = wait_for(s, victim, {"preempted", "failed"})
        assert j["state"] == "preempted" and j["restarts"] == 1, j
        wait_for(s, urgent, {"succeeded"})
        j = wait_for(s, victim, {"succeeded", "failed"})
        out = cli(s, "logs", str(victim))[1]
        assert j["state"] == "succeeded", out
        assert "[0] resumed 0 from step-7" in out and "[1] resumed 1 from step-7" in out, out
        assert "SIGKILL" not in out, out
    finally:
        s.stop()


def test_a_second_store_in_the_same_folder_is_told_to_give_its_queue_a_file(tmp_path):
    first = TrackingServer(tmp_path, ["--slots", "1"], store=f"sqlite:{tmp_path}/a.db")
    try:
        second = subprocess.run([COHORT, "server", "--store", f"sqlite:{tmp_path}/b.db",
                                 "--port", "0", "--slots", "1"],
                                capture_output=True, text=True, timeout=DEADLINE_S)
        assert second.returncode != 0
        assert "is open in another process" in second.stderr, second.stderr
        assert second.stderr.rstrip().endswith(
            "; use that server's queue, or give this server's queue a file of its own with "
            "--queue-db PATH"), second.stderr
        assert "another --store" not in second.stderr
    finally:
        first.stop()


def test_quota_reclaims_borrowed_slots(tmp_path):
    s = start_server(tmp_path, extra=["--quota", "a=1,b=1"])
    try:
        own = submit(s, "--project", "a", "--", *gate(tmp_path))
        borrowing = submit(s, "--project", "a", "--", *gate(tmp_path))
        assert wait_for(s, own, {"running"})["borrowed"] is False
        assert wait_for(s, borrowing, {"running"})["borrowed"] is True
        # Project b claims its guaranteed slot: a's borrowed job gives it back.
        claim = submit(s, "--project", "b", "--", "true")
        j = wait_for(s, borrowing, {"preempted"})
        assert j["restarts"] == 1 and "job " + str(claim) in j["reason"], j
        assert wait_for(s, claim, {"succeeded", "failed"})["state"] == "succeeded"
        assert job(s, own)["state"] == "running"
        (tmp_path / "go").touch()
        assert wait_for(s, borrowing, {"succeeded", "failed"})["state"] == "succeeded"
    finally:
        s.stop()
    rc, _, err = cli(s, "submit", "--", "true")  # the server is gone
    assert rc == 1 and "cannot reach the queue at " + s.url in err
    p = subprocess.run([COHORT, "server", "--quota", "a"], capture_output=True, text=True,
                       timeout=DEADLINE_S)
    assert (p.returncode, p.stderr) == (
        2, "cohort server: --quota: 'a' is not PROJECT=SLOTS\n"
           "usage: cohort server [--store URI] [--host HOST] [--port PORT]  "
           "(cohort server --help lists the options)\n")


def test_max_time_stops_the_job(server):
    j = submit(server, "--max-time", "0.5", "--", "sleep", "30")
    j = wait_for(server, j, {"failed", "succeeded"})
    assert (j["reason"], j["exit_code"]) == ("exceeded --max-time 0.5s", 128 + signal.SIGTERM)
    rc, _, err = cli(server, "submit", "--max-time", "soon", "--", "true")
    assert (rc, err.splitlines()[0]) == (
        2, "cohort submit: --max-time 'soon' is not a duration (seconds, or a number with s, m, "
           "h or d)")


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_restart_readopts_running_jobs(tmp_path, how):
    s = start_server(tmp_path)
    follows = submit(s, "--", *gate(tmp_path))
    ends_while_down = submit(s, "--", *gate(tmp_path, "go-early"))
    waiting = submit(s, "--slots", "2", "--", "echo", "after")
    wait_for(s, follows, {"running"})
    wait_for(s, ends_while_down, {"running"})
    s.stop(how)
    # The jobs outlive the server: one ends while no server runs.
    (tmp_path / "go-early").touch()
    log = tmp_path / "queue-logs" / f"{ends_while_down}.exit"
    wait_file(log)
    s = start_server(tmp_path)
    try:
        assert job(s, follows)["state"] == "running"
        assert wait_for(s, ends_while_down, {"succeeded", "failed"})["state"] == "succeeded"
        assert job(s, waiting)["state"] == "pending"
        (tmp_path / "go").touch()
        assert wait_for(s, follows, {"succeeded", "failed"})["state"] == "succeeded"
        assert cli(s, "logs", str(follows)) == (0, "released\n", "")
        assert wait_for(s, waiting, {"succeeded", "failed"})["state"] == "succeeded"
    finally:
        s.stop()


def marked_processes(mark):
    """{pid: (COHORT_JOB_ID, process group)} of the live processes whose
    environment holds TEST_MARK=mark."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # state, ppid, pgrp, ...
        if f"TEST_MARK={mark}".encode() not in env or fields[0] in ("Z", "X"):
            continue
        job_id = next(int(e[14:]) for e in env if e.startswith(b"COHORT_JOB_ID="))
        found[int(pid)] = (job_id, int(fields[2]))
    return found


def test_kill_9_during_a_burst_of_starts_runs_each_job_once(tmp_path):
    """Issue 25, item 9: the server killed while it starts 40 jobs, then
    restarted: each job ran once, every job's processes are the server's to
    follow (one process group per job), and none outlive their job."""
    jobs = 40
    for attempt, kill_after in enumerate((1, 10, 25)):
        home = tmp_path / f"a{attempt}"
        home.mkdir()
        mark = f"{os.getpid()}-{attempt}"
        ids = home / "ids"
        s = start_server(home, slots=jobs + 1)
        try:
            blocker = submit(s, "--slots", str(jobs + 1), "--", *gate(home, "blocker"))
            wait_for(s, blocker, {"running"})
            body = {"command": ["sh", "-c", f"echo $COHORT_JOB_ID >> {ids}; "
                                            f"while [ ! -e {home}/go ]; do sleep 0.05; done"],
                    "env": [f"TEST_MARK={mark}", "PATH=" + os.environ["PATH"]], "cwd": str(home)}
            submitted = []
            for _ in range(jobs):
                status, answer = s.request("POST", "/api/queue/jobs", body=body,
                                           headers=queue_headers(s))
                assert status == 200, answer
                submitted.append(answer["id"])
            (home / "blocker").touch()  # the next pass starts all 40 at once
            deadline = time.monotonic() + DEADLINE_S
            while not ids.exists() or len(ids.read_text().split()) < kill_after:
                assert time.monotonic() < deadline, "the burst never started"
                time.sleep(0.001)
            s.stop(signal.SIGKILL)
            s = start_server(home, slots=jobs + 1)
            deadline = time.monotonic() + DEADLINE_S
            while True:  # every job started again or followed
                states = [job(s, i)["state"] for i in submitted]
                if all(state not in ("pending", "starting") for state in states) and \
                        len(ids.read_text().split()) >= states.count("running"):
                    break
                assert time.monotonic() < deadline, states
                time.sleep(0.05)
            running = {i for i, state in zip(submitted, states) if state == "running"}
            started = [int(x) for x in ids.read_text().split()]
            assert sorted(started) == sorted(set(started)), f"attempt {attempt}: a job ran twice"
            groups = {}
            for job_id, pgid in marked_processes(mark).values():
                groups.setdefault(job_id, set()).add(pgid)
            assert set(groups) == running, (attempt, sorted(groups), sorted(running))
            assert all(len(g) == 1 for g in groups.values()), groups  # one copy of each
            (home / "go").touch()
            for i in submitted:
                j = wait_for(s, i, {"succeeded", "failed"})
                assert j["state"] == "succeeded", (attempt, j["reason"], j["exit_code"])
            assert sorted(int(x) for x in ids.read_text().split()) == submitted
            deadline = time.monotonic() + DEADLINE_S
            while marked_processes(mark):
                assert time.monotonic() < deadline, marked_processes(mark)
                time.sleep(0.05)
        finally:
            (home / "go").touch()
            (home / "blocker").touch()
            s.stop()


def test_logs_follow_until_the_job_ends(server, tmp_path):
    j = submit(server, "--", "sh", "-c", f"echo one; {' '.join(gate(tmp_path)[2:])}; echo two")
    j_str = str(j)
    env = dict(os.environ, COHORT_SERVER=server.url)
    follower = subprocess.Popen([COHORT, "logs", j_str, "-f"], stdout=subprocess.PIPE, env=env,
                                text=True)
    assert follower.stdout.readline() == "one\n"
    (tmp_path / "go").touch()
    out, _ = follower.communicate(timeout=DEADLINE_S)
    assert (follower.returncode, out) == (0, "released\ntwo\n")


GARBAGE = [
    ("POST", "/api/queue/jobs", b"not json", 400, "BAD_REQUEST"),
    ("POST", "/api/queue/jobs", b'{"command": 5}', 400, "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/jobs", b'{"command": []}', 400, "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/jobs", b'{"command": ["true"], "slots": -1}', 400,
     "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/jobs", b'{"command": ["true"], "slots": "x"}', 400,
     "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/jobs", b'{"command": ["true"], "priority": "urgent"}', 400,
     "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/jobs", b'{"command": ["true"], "max_time": -5}', 400,
     "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/jobs", b'{"command": ["true"], "env": ["NOEQUALS"]}', 400,
     "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/jobs", b'[1, 2]', 400, "BAD_REQUEST"),
    ("GET", "/api/queue/jobs/abc", None, 400, "INVALID_PARAMETER_VALUE"),
    ("GET", "/api/queue/jobs/99999999999999999999999", None, 400, "INVALID_PARAMETER_VALUE"),
    ("GET", "/api/queue/jobs/12345", None, 404, "RESOURCE_DOES_NOT_EXIST"),
    ("GET", "/api/queue/jobs/1/cancel", None, 404, "ENDPOINT_NOT_FOUND"),
    ("DELETE", "/api/queue/jobs", None, 404, "ENDPOINT_NOT_FOUND"),
    ("GET", "/api/queue/", None, 404, "ENDPOINT_NOT_FOUND"),
    ("GET", "/api/queue/jobs/1/log?offset=-3", None, 400, "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/agents/bad%20name/heartbeat", b'{"slots": 1}', 400,
     "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/agents/local/heartbeat", b'{"slots": 1}', 400, "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/agents/a1/heartbeat", b'{}', 400, "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/agents/a1/heartbeat", b'{"slots": 0}', 400, "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/agents/a1/heartbeat", b'{"slots": 1, "running": "x"}', 400,
     "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/agents/a1/heartbeat", b'{"slots": 1, "running": [-1]}', 400,
     "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/agents/a1/heartbeat", b'nope', 400, "BAD_REQUEST"),
    ("POST", "/api/queue/agents/a1/jobs/1/log", b'bytes', 400, "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/agents/a1/jobs/1/log?offset=0", b'bytes', 403, "PERMISSION_DENIED"),
    ("POST", "/api/queue/agents/a1/jobs/x/exit", b'{"exit_code": 0}', 400,
     "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/agents/a1/jobs/1/exit", b'{"exit_code": 300}', 400,
     "INVALID_PARAMETER_VALUE"),
    ("POST", "/api/queue/agents/a1/jobs/1/nothing", b'{}', 404, "ENDPOINT_NOT_FOUND"),
    ("GET", "/api/queue/agents/a1/heartbeat", None, 404, "ENDPOINT_NOT_FOUND"),
]


def test_garbage_on_the_endpoints_is_refused(server):
    assert submit(server, "--", "true") == 1
    for method, path, raw, status, code in GARBAGE:
        got, body = server.request(method, path, raw=raw,
                                   headers={"Content-Type": "application/json",
                                            **queue_headers(server)})
        assert (got, body["error_code"]) == (status, code), (method, path, raw, body)
        assert body["message"]
    got, body = server.request("POST", "/api/queue/jobs",
                               raw=b'{"command": ["true"], "priority": "urgent"}',
                               headers=queue_headers(server))
    assert "urgent" in body["message"]
    assert server.request("GET", "/health") == (200, b"OK")
    assert job(server, 1)["id"] == 1
    assert server.request("GET", "/api/queue/agents", headers=queue_headers(server)) == (
        200, {"agents": []})


def start_agent(server, tmp_path, name):
    env = dict(os.environ, COHORT_SERVER=server.url)
    return subprocess.Popen([COHORT, "agent", "--slots", "1", "--name", name, "--heartbeat", "0.2",
                             "--work-dir", str(tmp_path / name)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_agents(server, names):
    deadline = time.monotonic() + DEADLINE_S
    while True:
        status, body = server.request("GET", "/api/queue/agents", headers=queue_headers(server))
        if {a["name"] for a in body["agents"] if a["alive"]} == set(names):
            return
        assert time.monotonic() < deadline, body
        time.sleep(0.05)


def test_agents_run_jobs_and_a_killed_agents_jobs_are_requeued(tmp_path):
    s = start_server(tmp_path, slots=0, extra=["--agent-timeout", "1"])
    agents = {name: start_agent(s, tmp_path, name) for name in ("a1", "a2")}
    try:
        wait_agents(s, ["a1", "a2"])
        assert cli(s, "submit", "--slots", "3", "--", "true") == (
            1, "", "cohort submit: the job asks for 3 slots but pool 'default' has 2 slots\n")
        first = submit(s, "--", "sh", "-c", f"echo $$ > {tmp_path}/pid-$COHORT_JOB_RESTARTS; "
                       f"echo run $COHORT_JOB_RESTARTS; {' '.join(gate(tmp_path)[2:])}",
                       cwd=tmp_path)
        second = submit(s, "--", *gate(tmp_path, "go2"))
        j = wait_for(s, first, {"running"})
        wait_for(s, second, {"running"})
        assert j["host"] in agents
        wait_file_holds(tmp_path / "queue-logs" / f"{first}.log", "run 0\n")  # streamed
        pid = int((tmp_path / "pid-0").read_text())
        # The agent dies: within its timeout the job is requeued, and its
        # process, tied to the agent, is gone.
        agents.pop(j["host"]).kill()
        requeued = wait_for(s, first, {"preempted"})
        assert requeued["reason"].startswith(
            f"requeued: agent {j['host']} stopped heartbeating; first in line: needs 1 slots")
        assert requeued["restarts"] == 1
        deadline = time.monotonic() + DEADLINE_S
        while os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split()[2] != "Z":
            assert time.monotonic() < deadline, "the dead agent's job still runs"
            time.sleep(0.05)
        (tmp_path / "go2").touch()  # frees the surviving agent's slot
        assert wait_for(s, second, {"succeeded", "failed"})["state"] == "succeeded"
        (tmp_path / "go").touch()
        done = wait_for(s, first, {"succeeded", "failed"})
        assert (done["state"], done["restarts"]) == ("succeeded", 1)
        assert done["host"] in agents and done["exit_code"] == 0
        # Both runs' output reached the server, the second after the first.
        assert cli(s, "logs", str(first))[1] == "run 0\nrun 1\nreleased\n"
    finally:
        for agent in agents.values():
            agent.terminate()
            agent.wait(timeout=DEADLINE_S)
        s.stop()



def heartbeat(server, name, slots, running=()):
    status, work = server.request("POST", f"/api/queue/agents/{name}/heartbeat",
                                  body={"slots": slots, "running": list(running)},
                                  headers=queue_headers(server))
    assert status == 200, work
    return work


def test_an_agent_back_with_fewer_slots_than_its_jobs_hold(tmp_path):
    # Agent a1 runs two 2-slot jobs, then reports 2 slots: it holds 2 more than
    # it has. A 2-slot job waits for that debt to be paid: the first job's end
    # pays it, the second's frees the slots. (The scheduler thread read a
    # placement out of an empty optional here and the server died.)
    s = start_server(tmp_path, slots=0)
    try:
        heartbeat(s, "a1", 4)
        ids = []
        for max_time in (1000, 2000):
            status, body = s.request("POST", "/api/queue/jobs",
                                     body={"command": ["true"], "slots": 2, "max_time": max_time},
                                     headers=queue_headers(s))
            assert status == 200, body
            ids.append(body["id"])
        running = [wait_for(s, i, {"running"}) for i in ids]
        assert [j["host"] for j in running] == ["a1", "a1"]
        heartbeat(s, "a1", 2, running=ids)
        status, body = s.request("POST", "/api/queue/jobs", body={"command": ["true"], "slots": 2},
                                 headers=queue_headers(s))
        assert status == 200, body
        third = body["id"]
        deadline = time.monotonic() + DEADLINE_S
        while (j := job(s, third))["estimated_start"] is None:
            assert time.monotonic() < deadline, j
            time.sleep(0.05)
        assert j["state"] == "pending", j
        in_s = int(j["reason"].rsplit("(in ", 1)[1].removesuffix(" s)"))
        assert j["reason"] == ("first in line: needs 2 slots, 0 free; slots reserved from when "
                               f"running jobs end (in {in_s} s)")
        assert 1990 <= in_s <= 2000, j
        assert abs(j["estimated_start"] - (running[1]["started"] + 2000)) < 1e-3, j
        assert s.request("GET", "/health") == (200, b"OK")
    finally:
        s.stop()


@pytest.mark.parametrize("policy", ["fifo", "strict-priority"])
def test_the_policy_flag_chooses_the_queues_policy(tmp_path, policy):
    """cohort server --policy: a policy without backfill keeps a small job
    behind a waiting big one and says so; cohort's (the default) would not
    name itself there."""
    s = start_server(tmp_path, slots=2, extra=["--policy", policy])
    try:
        blocker = submit(s, "--slots", "1", "--", *gate(tmp_path))
        wait_for(s, blocker, {"running"})
        big = submit(s, "--slots", "2", "--", "true")
        small = submit(s, "--slots", "1", "--", "true")
        expected = f"behind job {big}, which waits for 2 slots ({policy} does not backfill)"
        deadline = time.monotonic() + DEADLINE_S
        while job(s, small)["reason"] != expected:
            assert time.monotonic() < deadline, job(s, small)
            time.sleep(0.05)
        (tmp_path / "go").touch()
        wait_for(s, small, {"succeeded"})
    finally:
        s.stop()


def test_an_unknown_policy_is_a_usage_error_naming_the_choices(tmp_path):
    p = subprocess.run([COHORT, "server", "--slots", "1", "--policy", "lifo"],
                       capture_output=True, text=True, timeout=DEADLINE_S)
    assert p.returncode == 2
    assert p.stderr.splitlines()[0] == (
        "cohort server: --policy: unknown policy 'lifo' (expected cohort, fifo or strict-priority)")
