"""Who may use `cohort server`'s job queue (docs/security.md): the queue is off
unless asked for; without --auth it needs the token the server generates
(0600, found by local clients); under --auth users submit only to projects
granted to them, see only their own jobs and those of projects they may read,
and agents act only with their own credentials on the jobs placed on them.
Each attack of issue 25 (items 1-3) is a test here; `cohort queue` shows
control characters escaped (item 13)."""
import json
import os
import stat
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../server"))
import postgres_cluster  # noqa: E402
from tracking_server_fixture import COHORT, TrackingServer  # noqa: E402

DEADLINE_S = 30
NO_QUEUE = ("this server runs no job queue; start it with --slots N (jobs on this host; "
            "--slots 0: on agents only) or --slurm-pool NAME")


def run(*args, env=None, **kw):
    p = subprocess.run([COHORT, *args], capture_output=True, text=True, timeout=DEADLINE_S,
                       env=env, **kw)
    return p.returncode, p.stdout, p.stderr


def client_env(server, user="alice", **extra):
    env = dict(os.environ, COHORT_SERVER=server.url, USER=user, **extra)
    for name in ("COHORT_TRACKING_TOKEN", "MLFLOW_TRACKING_TOKEN", "COHORT_QUEUE_TOKEN",
                 "COHORT_AGENT_CREDENTIAL"):
        if name not in extra:
            env.pop(name, None)
    return env


def token_file(tmp_path):
    return tmp_path / "queue-token"


def error(answer):
    status, body = answer
    return status, body["error_code"], body["message"]


def bearer(secret):
    return {"Authorization": "Bearer " + secret}


def wait_for(server, job_id, states, headers):
    deadline = time.monotonic() + DEADLINE_S
    while True:
        status, j = server.request("GET", f"/api/queue/jobs/{job_id}", headers=headers)
        assert status == 200, j
        if j["state"] in states:
            return j
        assert time.monotonic() < deadline, j
        time.sleep(0.05)


def test_the_queue_is_off_unless_asked_for(tmp_path):
    s = TrackingServer(tmp_path)
    try:
        for method, path in (("GET", "/api/queue/jobs"), ("POST", "/api/queue/jobs"),
                             ("POST", "/api/queue/agents/a1/heartbeat")):
            assert error(s.request(method, path, body={"command": ["true"], "slots": 1})) == (
                404, "ENDPOINT_NOT_FOUND", NO_QUEUE), path
        assert run("submit", "--", "true", env=client_env(s)) == (
            1, "", f"cohort submit: {NO_QUEUE}\n")
        assert not (tmp_path / "queue.db").exists() and not token_file(tmp_path).exists()
        assert s.get("experiments/get", experiment_id="0")[0] == 200  # tracking works
    finally:
        s.stop()
    # Queue settings without a queue are a mistake, not silently ignored.
    for flag, value in (("--grace", "5"), ("--agent-timeout", "5"), ("--quota", "a=1"),
                        ("--slurm-partition", "p")):
        rc, _, err = run("server", "--store", f"sqlite:{tmp_path}/t2.db", "--port", "0", flag,
                         value)
        assert (rc, err.splitlines()[0]) == (
            2, f"cohort server: {flag} needs the job queue: add --slots N or --slurm-pool NAME"), err


def test_without_auth_the_queue_needs_its_generated_token(tmp_path):
    s = TrackingServer(tmp_path, ["--slots", "1"])
    try:
        path = token_file(tmp_path)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        token = path.read_text().strip()
        assert token.startswith("cohort_queue_") and len(token) == 13 + 64
        hint = ("cohort commands on the server's host find it themselves; elsewhere set "
                f"COHORT_QUEUE_TOKEN to the content of {path} (on the server's host)")
        # A page in a browser can send this request; the server's guard refuses it
        # before the queue sees it (docs/security.md, HTTP server).
        assert error(s.request("POST", "/api/queue/jobs", raw=b'{"command": ["touch", "x"]}',
                               headers={"Content-Type": "text/plain"}))[0] == 415
        # A client that can send JSON still needs the token: without it, nothing runs.
        assert error(s.request("POST", "/api/queue/jobs", raw=b'{"command": ["touch", "x"]}',
                               headers={"Content-Type": "application/json"})) == (
            401, "UNAUTHENTICATED",
            "This server's job queue needs its token in the X-Cohort-Queue-Token header: " + hint)
        assert error(s.request("GET", "/api/queue/jobs",
                               headers={"X-Cohort-Queue-Token": "cohort_queue_wrong"})) == (
            401, "UNAUTHENTICATED", "Invalid queue token: " + hint)
        # Taking a real agent's name needs the secret too.
        assert error(s.request("POST", "/api/queue/agents/a1/heartbeat", body={"slots": 1}))[:2] \
            == (401, "UNAUTHENTICATED")
        assert s.request("GET", "/api/queue/jobs", headers={"X-Cohort-Queue-Token": token}) == (
            200, {"jobs": []})
        # An agent's credential that the store does not know is refused, not ignored.
        assert error(s.request("POST", "/api/queue/agents/a1/heartbeat", body={"slots": 1},
                               headers={"X-Cohort-Queue-Token": token,
                                        **bearer("cohort_agent_forged")})) == (
            401, "UNAUTHENTICATED", "Invalid agent credential")
        assert s.request("GET", "/api/queue/jobs", headers=bearer(token)) == (200, {"jobs": []})
        # Local clients find the token without being told.
        rc, out, err = run("submit", "--", "true", env=client_env(s), cwd=tmp_path)
        assert (rc, out, err) == (0, "1\n", "")
        assert wait_for(s, 1, {"succeeded", "failed"},
                        {"X-Cohort-Queue-Token": token})["state"] == "succeeded"
        # A wrong token in the environment wins over the found one, and fails.
        rc, _, err = run("queue", env=client_env(s, COHORT_QUEUE_TOKEN="cohort_queue_x"))
        assert (rc, err) == (1, "cohort queue: Invalid queue token: " + hint + "\n")
        # Elsewhere (no discovery file for this server) the variable is the way.
        rc, out, _ = run("queue", "--json", env=client_env(s, COHORT_QUEUE_TOKEN=token,
                                                           XDG_RUNTIME_DIR=str(tmp_path / "none"),
                                                           HOME=str(tmp_path / "none")))
        assert rc == 0 and [j["id"] for j in json.loads(out)] == [1]
        rc, _, err = run("queue", env=client_env(s, XDG_RUNTIME_DIR=str(tmp_path / "none"),
                                                 HOME=str(tmp_path / "none")))
        assert (rc, err) == (1, "cohort queue: This server's job queue needs its token in the "
                                "X-Cohort-Queue-Token header: " + hint + "\n")
    finally:
        s.stop()
    # The token outlives a restart: agents configured with it keep working.
    s = TrackingServer(tmp_path, ["--slots", "1"])
    try:
        assert token_file(tmp_path).read_text().strip() == token
        assert s.request("GET", "/api/queue/jobs/1", headers={"X-Cohort-Queue-Token": token})[0] \
            == 200
    finally:
        s.stop()
    # A token file others may read is refused, not used.
    os.chmod(token_file(tmp_path), 0o644)
    rc, _, err = run("server", "--store", f"sqlite:{tmp_path}/tracking.db", "--port", "0",
                     "--slots", "1")
    assert (rc, err) == (1, f"cohort server: the queue token {token_file(tmp_path)} may be read "
                            f"by other users (mode 644): chmod 600 it\n")


def add_users(store, *names):
    tokens = {}
    for name in names:
        assert run("user", "add", name, "--store", store)[0] == 0
        rc, out, err = run("token", "create", name, "--store", store)
        assert rc == 0, err
        tokens[name] = out.strip()
    return tokens


def add_agent(store, name):
    rc, out, err = run("agent-credential", "add", name, "--store", store)
    assert rc == 0, err
    secret = out.strip()
    assert secret.startswith("cohort_agent_") and len(secret) == 13 + 64
    return secret


def grant(store, user, project, level):
    return run("user", "grant", user, "--queue-project", project, level, "--store", store)


def heartbeat(server, name, secret, running=(), slots=1):
    return server.request("POST", f"/api/queue/agents/{name}/heartbeat",
                          body={"slots": slots, "running": list(running), "wait_s": 0},
                          headers=bearer(secret) if secret else {})


def test_under_auth_submitting_needs_a_grant_and_agents_their_credentials(tmp_path):
    store = f"sqlite:{tmp_path}/tracking.db"
    tokens = add_users(store, "alice", "bob")
    assert grant(store, "alice", "vision", "submit") == (
        0, "alice may submit to queue project vision\n", "")
    assert grant(store, "carol", "vision", "submit") == (
        1, "", "cohort user: User 'carol' does not exist.\n")
    assert grant(store, "alice", "vision", "edit") == (
        1, "", "cohort user: Invalid queue permission 'EDIT': expected READ, SUBMIT or NONE\n")
    secrets = {name: add_agent(store, name) for name in ("a1", "a2")}
    assert run("agent-credential", "add", "a1", "--store", store) == (
        1, "", "cohort agent-credential: Agent 'a1' already has a credential: revoke it first.\n")
    s = TrackingServer(tmp_path, ["--auth", "--slots", "0", "--agent-timeout", "30"], store=store)
    try:
        assert not token_file(tmp_path).exists()  # users' tokens stand in for it
        alice, bob = bearer(tokens["alice"]), bearer(tokens["bob"])
        assert heartbeat(s, "a1", secrets["a1"]) == (200, {"start": [], "signal": [], "drop": []})
        job = {"command": ["sh", "-c", "echo $SECRET"], "project": "vision",
               "env": ["SECRET=hunter2"]}
        # A user with no grant: refused, nothing recorded.
        assert error(s.request("POST", "/api/queue/jobs", body=job, headers=bob)) == (
            403, "PERMISSION_DENIED", "User 'bob' may not submit to queue project 'vision' (an "
            "admin grants it: cohort user grant bob --queue-project vision submit)")
        assert error(s.request("POST", "/api/queue/jobs", body=dict(job, project="nlp"),
                               headers=alice))[:2] == (403, "PERMISSION_DENIED")
        status, body = s.request("POST", "/api/queue/jobs", body=job, headers=alice)
        assert status == 200 and body["id"] == 1, body
        assert wait_for(s, 1, {"running"}, alice)["host"] == "a1"
        # A user's token is not an agent's: no job, no secret.
        answer = heartbeat(s, "a1", tokens["bob"])
        assert error(answer) == (403, "PERMISSION_DENIED", "Agent endpoints take an agent "
                                 "credential (cohort agent-credential add a1), not user bob's "
                                 "token")
        assert error(heartbeat(s, "a1", None)) == (
            401, "UNAUTHENTICATED", "This server requires an agent credential: send "
            "'Authorization: Bearer CREDENTIAL' (credentials come from `cohort agent-credential "
            "add NAME`)")
        assert error(heartbeat(s, "a1", "cohort_agent_forged")) == (
            401, "UNAUTHENTICATED", "Invalid agent credential")
        assert error(heartbeat(s, "a1", secrets["a2"])) == (
            403, "PERMISSION_DENIED", "Agent a2's credential cannot act as agent a1")
        # An agent's credential is for its endpoints only.
        assert error(s.request("GET", "/api/queue/jobs", headers=bearer(secrets["a1"]))) == (
            403, "PERMISSION_DENIED", "Agent a1's credential is only for its agent endpoints")
        # Another agent, with its own credential, gets nothing of a1's.
        assert heartbeat(s, "a2", secrets["a2"]) == (200, {"start": [], "signal": [], "drop": []})
        # The job placed on a1 goes to a1 only, with its environment.
        status, work = heartbeat(s, "a1", secrets["a1"])
        assert status == 200 and [j["id"] for j in work["start"]] == [1]
        assert "SECRET=hunter2" in work["start"][0]["env"]
        # Nobody else reports its output or its end.
        for who in (bearer(secrets["a2"]), bob, alice):
            assert error(s.request("POST", "/api/queue/agents/a2/jobs/1/exit",
                                   body={"exit_code": 0}, headers=who))[0] == 403
            assert error(s.request("POST", "/api/queue/agents/a1/jobs/1/exit",
                                   body={"exit_code": 0}, headers=who))[0] == 403
        assert error(s.request("POST", "/api/queue/agents/a2/jobs/1/exit", body={"exit_code": 0},
                               headers=bearer(secrets["a2"]))) == (
            403, "PERMISSION_DENIED", "job 1 does not run on agent a2")
        assert error(s.request("POST", "/api/queue/agents/a2/jobs/1/log?offset=0", raw=b"forged",
                               headers=bearer(secrets["a2"]))) == (
            403, "PERMISSION_DENIED", "job 1 does not run on agent a2")
        j = wait_for(s, 1, {"running"}, alice)
        assert (j["state"], j["exit_code"], j["host"]) == ("running", None, "a1")
        # Nothing a reader gets holds the environment.
        for path in ("/api/queue/jobs", "/api/queue/jobs/1", "/api/queue/agents"):
            status, body = s.request("GET", path, headers=alice)
            assert status == 200 and "hunter2" not in json.dumps(body), path
        # The owning agent reports; the job ends as it says.
        assert s.request("POST", "/api/queue/agents/a1/jobs/1/log?offset=0", raw=b"hunter2\n",
                         headers=bearer(secrets["a1"])) == (200, {"offset": 8})
        assert s.request("POST", "/api/queue/agents/a1/jobs/1/exit", body={"exit_code": 0},
                         headers=bearer(secrets["a1"])) == (200, {})
        assert wait_for(s, 1, {"succeeded", "failed"}, alice)["state"] == "succeeded"
    finally:
        s.stop()
    # A revoked credential is refused by the next server.
    assert run("agent-credential", "revoke", "a2", "--store", store) == (
        0, "revoked the credential of agent a2\n", "")
    assert run("agent-credential", "list", "--store", store) == (0, "a1\n", "")
    assert run("agent-credential", "revoke", "a2", "--store", store) == (
        1, "", "cohort agent-credential: Agent 'a2' has no credential.\n")
    s = TrackingServer(tmp_path, ["--auth", "--slots", "0"], store=store)
    try:
        assert error(heartbeat(s, "a2", secrets["a2"])) == (401, "UNAUTHENTICATED",
                                                            "Invalid agent credential")
    finally:
        s.stop()


def test_under_auth_users_see_their_jobs_and_those_of_projects_they_read(tmp_path):
    store = f"sqlite:{tmp_path}/tracking.db"
    tokens = add_users(store, "alice", "bob", "carol")
    assert grant(store, "alice", "vision", "submit")[0] == 0
    assert grant(store, "bob", "nlp", "submit")[0] == 0
    assert grant(store, "carol", "vision", "read") == (
        0, "carol may read queue project vision\n", "")
    s = TrackingServer(tmp_path, ["--auth", "--slots", "2"], store=store)
    try:
        h = {name: bearer(token) for name, token in tokens.items()}

        def submit(user, project):
            status, body = s.request("POST", "/api/queue/jobs", headers=h[user],
                                     body={"command": ["echo", user], "project": project,
                                           "cwd": str(tmp_path)})
            assert status == 200, body
            return body["id"]

        a = submit("alice", "vision")
        b = submit("bob", "nlp")
        for j in (a, b):
            wait_for(s, j, {"succeeded"}, h["alice"] if j == a else h["bob"])

        def listed(user):
            status, body = s.request("GET", "/api/queue/jobs", headers=h[user])
            assert status == 200, body
            return [j["id"] for j in body["jobs"]]

        assert listed("alice") == [a] and listed("bob") == [b] and listed("carol") == [a]
        assert error(s.request("GET", f"/api/queue/jobs/{a}", headers=h["bob"])) == (
            403, "PERMISSION_DENIED", f"User 'bob' may not read job {a}")
        assert error(s.request("GET", f"/api/queue/jobs/{a}/log", headers=h["bob"])) == (
            403, "PERMISSION_DENIED", f"User 'bob' may not read job {a}")
        assert error(s.request("POST", f"/api/queue/jobs/{a}/cancel", body={},
                               headers=h["bob"])) == (
            403, "PERMISSION_DENIED", f"User 'bob' may not read job {a}")
        assert s.request("GET", f"/api/queue/jobs/{a}/log", headers=h["carol"]) == (
            200, b"alice\n")
        assert error(s.request("GET", f"/api/queue/jobs/{b}/log", headers=h["carol"]))[0] == 403
        # Reading is not submitting.
        assert error(s.request("POST", "/api/queue/jobs", headers=h["carol"],
                               body={"command": ["true"], "project": "vision"}))[0] == 403
    finally:
        s.stop()
    # A grant of NONE takes it back.
    assert grant(store, "carol", "vision", "none") == (
        0, "carol may no longer use queue project vision\n", "")


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_grants_and_agent_credentials_in_both_stores(backend, tmp_path):
    cluster = None
    if backend == "sqlite":
        store = f"sqlite:{tmp_path}/tracking.db"
        queue = []
    else:
        if not postgres_cluster.available():
            pytest.skip("PostgreSQL 15 is not installed: apt-get install postgresql-15")
        cluster = postgres_cluster.PostgresCluster(fsync=False)
        store = cluster.new_database()
        queue = ["--queue-db", str(tmp_path / "queue.db")]
    try:
        tokens = add_users(store, "alice", "bob")
        assert grant(store, "alice", "vision", "read")[0] == 0
        assert grant(store, "alice", "vision", "submit")[0] == 0  # raised, not added twice
        assert grant(store, "bob", "*", "read")[0] == 0
        a1 = add_agent(store, "a1")
        assert run("agent-credential", "list", "--store", store) == (0, "a1\n", "")
        s = TrackingServer(tmp_path, ["--auth", "--slots", "0", *queue], store=store)
        try:
            assert heartbeat(s, "a1", a1)[0] == 200
            status, body = s.request("POST", "/api/queue/jobs", headers=bearer(tokens["alice"]),
                                     body={"command": ["true"], "project": "vision"})
            assert status == 200, body
            assert error(s.request("POST", "/api/queue/jobs", headers=bearer(tokens["bob"]),
                                   body={"command": ["true"], "project": "vision"}))[0] == 403
            # bob reads every project.
            assert s.request("GET", f"/api/queue/jobs/{body['id']}",
                             headers=bearer(tokens["bob"]))[0] == 200
        finally:
            s.stop()
    finally:
        if cluster:
            cluster.stop()


def test_queue_shows_control_characters_escaped(tmp_path):
    s = TrackingServer(tmp_path, ["--slots", "1"])
    try:
        evil = "\x1b]0;owned\x07\x1b[2J\rfake\x9b31m"
        rc, out, err = run("submit", "--", "true", evil, env=client_env(s))
        assert rc == 0, err
        wait_for(s, int(out), {"succeeded"},
                 {"X-Cohort-Queue-Token": token_file(tmp_path).read_text().strip()})
        rc, out, err = run("queue", env=client_env(s))
        assert rc == 0, err
        assert not any(c in out for c in "\x1b\x07\r\x9b"), repr(out)
        line = out.splitlines()[1]
        assert " true \\x1b]0;owned\\x07\\x1b[2J\\rfake... " in line, line
        rc, out, _ = run("queue", "--json", env=client_env(s))
        assert rc == 0 and "\x1b" not in out and "\x9b" not in out
        assert json.loads(out)[0]["command"][1] == evil
    finally:
        s.stop()
