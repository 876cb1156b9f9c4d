#!/usr/bin/python3
"""Submit-to-start latency of the job queue (docs/performance.md, "Job queue").

Starts `cohort server --slots 0` and two `cohort agent`s on loopback (or, with
--cluster, inside the two hosts of an emulated cluster, tools/cluster, with the
server on its bridge: needs root), submits
JOBS short jobs one after another with `cohort submit` (each prints the time
its process started), waits for all of them, and prints, per repetition, the
median and p99 of (a) submitted -> placed (the server's `started`) and (b)
submitted -> the job's process running on its agent.

usage: bench/sched/queue_latency.py [--build DIR] [--jobs 50] [--repeats 3]
                                    [--agent-slots 4] [--cluster]
"""
import argparse
import json
import os
import re
import select
import statistics
import subprocess
import tempfile
import time
import urllib.request


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def start_server(cohort, tmp, host):
    proc = subprocess.Popen([cohort, "server", "--store", f"sqlite:{tmp}/t.db", "--host", host,
                             "--port", "0", "--slots", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    line = b""
    while b"\n" not in line:
        assert time.monotonic() < deadline, "server did not start"
        if select.select([proc.stdout], [], [], 1)[0]:
            line += os.read(proc.stdout.fileno(), 4096)
    return proc, re.search(rb"(http://[0-9.]+:\d+)", line).group(1).decode()


def token(tmp):
    """The queue's token, written beside its database (docs/security.md)."""
    with open(f"{tmp}/queue-token") as f:
        return f.read().strip()


def read(url, path, tmp):
    request = urllib.request.Request(url + path, headers={"X-Cohort-Queue-Token": token(tmp)})
    with urllib.request.urlopen(request, timeout=30) as r:
        return r.read()


def get(url, path, tmp):
    return json.loads(read(url, path, tmp))


def one_run(cohort, jobs, agent_slots, cluster):
    with tempfile.TemporaryDirectory() as tmp:
        server, url = start_server(cohort, tmp, f"{cluster[1]}.254" if cluster else "127.0.0.1")
        env = dict(os.environ, COHORT_SERVER=url)
        # With a cluster, agent i runs in host i's namespace.
        prefix = lambda i: ["ip", "netns", "exec", f"{cluster[0]}-h{i - 1}"] if cluster else []  # noqa: E731
        agents = [subprocess.Popen(prefix(i) + [cohort, "agent", "--slots", str(agent_slots),
                                                "--name", f"a{i}", "--work-dir", f"{tmp}/a{i}"],
                                   env=env, stdout=subprocess.DEVNULL)
                  for i in (1, 2)]
        try:
            deadline = time.monotonic() + 30
            while len([a for a in get(url, "/api/queue/agents", tmp)["agents"] if a["alive"]]) < 2:
                assert time.monotonic() < deadline, "agents did not register"
                time.sleep(0.05)
            ids = []
            for _ in range(jobs):
                out = subprocess.run([cohort, "submit", "--", "date", "+%s.%N"], env=env,
                                     capture_output=True, text=True, check=True).stdout
                ids.append(int(out))
            deadline = time.monotonic() + 120
            while True:
                listed = {j["id"]: j for j in get(url, "/api/queue/jobs", tmp)["jobs"]}
                if all(listed[i]["state"] == "succeeded" for i in ids):
                    break
                assert time.monotonic() < deadline, "jobs did not finish"
                time.sleep(0.1)
            placed, running = [], []
            for i in ids:
                j = listed[i]
                started = float(read(url, f"/api/queue/jobs/{i}/log", tmp).decode().split()[0])
                placed.append(j["started"] - j["submitted"])
                running.append(started - j["submitted"])
            hosts = sorted({listed[i]["host"] for i in ids} - {""})
            return placed, running, hosts
        finally:
            for a in agents:
                a.terminate()
                a.wait(timeout=30)
            server.terminate()
            server.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--agent-slots", type=int, default=4)
    parser.add_argument("--cluster", action="store_true",
                        help="agents inside an emulated cluster's hosts (tools/cluster)")
    args = parser.parse_args()
    cohort = os.path.abspath(os.path.join(args.build, "cohort"))
    cluster = None
    if args.cluster:
        tools = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tools/cluster")
        cluster = ("qbench", "10.77.199")
        subprocess.run([tools, "up", "--hosts", "2", "--name", cluster[0], "--subnet", cluster[1],
                        "--rate", "1gbit"], check=True, stdout=subprocess.DEVNULL)
    try:
        run_all(args, cohort, cluster)
    finally:
        if cluster:
            subprocess.run([tools, "down", "--name", cluster[0]], check=True,
                           stdout=subprocess.DEVNULL)


def run_all(args, cohort, cluster):
    print("load:", open("/proc/loadavg").read().split()[:3])
    medians, p99s = [], []
    for rep in range(args.repeats):
        placed, running, hosts = one_run(cohort, args.jobs, args.agent_slots, cluster)
        ms = lambda v: 1000 * v  # noqa: E731
        print(f"run {rep + 1}: {args.jobs} jobs on {hosts}: "
              f"submitted->placed median {ms(statistics.median(placed)):.1f} ms "
              f"p99 {ms(percentile(placed, 0.99)):.1f} ms; "
              f"submitted->process started median {ms(statistics.median(running)):.1f} ms "
              f"p99 {ms(percentile(running, 0.99)):.1f} ms")
        medians.append(statistics.median(running))
        p99s.append(percentile(running, 0.99))
    print(f"median of runs: submit-to-start median {1000 * statistics.median(medians):.1f} ms, "
          f"p99 {1000 * statistics.median(p99s):.1f} ms")
    print("load:", open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
