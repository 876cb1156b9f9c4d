"""Agents on emulated hosts (tools/cluster: network namespaces on a bridge):
`cohort server` listens on the bridge, one `cohort agent` runs inside each
host's namespace, and jobs run there, streaming their logs back."""
import os
import re
import select
import shutil
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from test_queue import COHORT, DEADLINE_S  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "../..")
CLUSTER = os.path.join(ROOT, "tools/cluster")
IP = "/usr/sbin/ip"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not os.access(IP, os.X_OK) or shutil.which("sshd", path="/usr/sbin") is None,
    reason="needs root, iproute2 and openssh-server (tools/cluster)")


@pytest.fixture
def cluster(tmp_path):
    name = f"q{os.getpid() % 100000}"
    state = str(tmp_path / "cluster")
    for attempt in range(8):  # another test may hold a subnet
        subnet = f"10.77.{1 + (os.getpid() + 53 + attempt * 37) % 250}"
        p = subprocess.run([CLUSTER, "up", "--hosts", "2", "--name", name, "--subnet", subnet,
                            "--state-dir", state], capture_output=True, text=True, timeout=120)
        if p.returncode == 0:
            break
        assert "already used" in p.stderr, p.stdout + p.stderr
    else:
        pytest.fail("tools/cluster found no free subnet")
    try:
        yield name, subnet, state
    finally:
        subprocess.run([CLUSTER, "down", "--name", name, "--state-dir", state],
                       capture_output=True, timeout=120)


class Server:
    def __init__(self, tmp_path, host):
        self.proc = subprocess.Popen(
            [COHORT, "server", "--store", f"sqlite:{tmp_path}/t.db", "--host", host, "--port", "0",
             "--slots", "0", "--agent-timeout", "2"], stdout=subprocess.PIPE)
        line, deadline = b"", time.monotonic() + DEADLINE_S
        while b"\n" not in line:
            assert time.monotonic() < deadline and self.proc.poll() is None, "no server"
            if select.select([self.proc.stdout], [], [], 1)[0]:
                line += os.read(self.proc.stdout.fileno(), 4096)
        self.url = re.search(rb"(http://[0-9.]+:\d+)", line).group(1).decode()

    def cli(self, *args, env=None):
        p = subprocess.run([COHORT, *args], capture_output=True, text=True, timeout=DEADLINE_S,
                           env=dict(os.environ, COHORT_SERVER=self.url, USER="alice", **(env or {})))
        return p.returncode, p.stdout, p.stderr

    def job(self, job_id):
        import json
        rc, out, err = self.cli("queue", "--json")
        assert rc == 0, err
        return next(j for j in json.loads(out) if j["id"] == job_id)

    def wait_for(self, job_id, states):
        deadline = time.monotonic() + DEADLINE_S
        while (j := self.job(job_id))["state"] not in states:
            assert time.monotonic() < deadline, j
            time.sleep(0.1)
        return j


def start_agents(name, subnet, server, tmp_path):
    return [subprocess.Popen([IP, "netns", "exec", f"{name}-h{i}", COHORT, "agent", "--server",
                              server.url, "--slots", "1", "--name", f"h{i}", "--address",
                              f"{subnet}.{i + 1}", "--heartbeat", "0.2", "--work-dir",
                              str(tmp_path / f"h{i}")], stdout=subprocess.DEVNULL)
            for i in range(2)]


def stop(agents, server):
    for a in agents:
        a.terminate()
        a.wait(timeout=DEADLINE_S)
    server.proc.terminate()
    server.proc.wait(timeout=DEADLINE_S)


ADDRESS = f"{IP} -o -4 addr show dev eth0 | sed 's/.*inet \\([0-9.]*\\).*/\\1/'"


def submit_when_registered(server, *args, env=None):
    deadline = time.monotonic() + DEADLINE_S
    while True:  # refused until the agents have registered
        rc, out, err = server.cli("submit", *args, env=env)
        if rc == 0:
            return int(out)
        assert time.monotonic() < deadline, err
        time.sleep(0.1)


def test_a_gang_spans_agents_through_cohort_run(cluster, tmp_path):
    name, subnet, state = cluster
    server = Server(tmp_path, f"{subnet}.254")
    agents = start_agents(name, subnet, server, tmp_path)
    try:
        ssh = {"COHORT_SSH_COMMAND": f"ssh -F {state}/ssh_config"}
        j = submit_when_registered(server, "--slots", "2", "--", "sh", "-c",
                                   f'echo "rank $COHORT_RANK at $({ADDRESS})"', env=ssh)
        done = server.wait_for(j, {"succeeded", "failed"})
        log = server.cli("logs", str(j))[1]
        assert done["state"] == "succeeded", log
        assert done["placement"] in ("h0:1,h1:1", "h1:1,h0:1")
        # cohort run prefixes each rank's lines; rank 0 runs on the leader, `host`.
        leader = int(done["host"][1:])
        assert sorted(log.splitlines()) == [f"[0] rank 0 at {subnet}.{1 + leader}",
                                            f"[1] rank 1 at {subnet}.{2 - leader}"], log
    finally:
        stop(agents, server)


def test_agents_on_emulated_hosts_run_jobs_there(cluster, tmp_path):
    name, subnet, _ = cluster
    server = Server(tmp_path, f"{subnet}.254")
    agents = start_agents(name, subnet, server, tmp_path)
    try:
        gate = f"while [ ! -e {tmp_path}/go ]; do sleep 0.05; done"
        ids = [submit_when_registered(server, "--", "sh", "-c", f"{ADDRESS}; {gate}")
               for _ in range(2)]
        jobs = [server.wait_for(i, {"running"}) for i in ids]
        assert sorted(j["host"] for j in jobs) == ["h0", "h1"]  # one slot each
        (tmp_path / "go").touch()
        for j in jobs:
            done = server.wait_for(j["id"], {"succeeded", "failed"})
            assert done["state"] == "succeeded"
            host = int(done["host"][1:])
            # It ran in that host's namespace: its eth0 has the host's address.
            assert server.cli("logs", str(j["id"]))[1] == f"{subnet}.{host + 1}\n"
    finally:
        (tmp_path / "go").touch()
        stop(agents, server)
