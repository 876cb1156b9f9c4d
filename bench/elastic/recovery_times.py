#!/usr/bin/env python3
"""How long an elastic job takes to go on after a change, at --np workers:

  death: a worker SIGKILLs itself mid-step (tests/python/elastic_train.py
         --kill); time from just before the kill to the survivors' next
         completed step (the new rank 0's clock: same host).
  grow:  the discovery script's host file gains a slot (--grow, the job runs
         at np-1 before); time from the file's write to the first step
         completed at np workers. It includes the launcher's discovery period
         (1 s) and the new worker's start-up (Python, torch, cohort imports).

    /usr/bin/python3 bench/elastic/recovery_times.py --np 4 --repeats 5

On emulated hosts (tools/cluster up --hosts 2 --name elc --subnet 10.79.0
--state-dir /tmp/elc), --cluster STATE_DIR puts np/2 workers on each of the
first two hosts (the grown job starts with one fewer on the second host) and
reaches them over ssh; the store listens on the cluster's bridge.

Prints one line per run and the medians (seconds)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(REPO, "build"))
TRAIN = os.path.join(REPO, "tests", "python", "elastic_train.py")
sys.path.insert(0, os.path.join(REPO, "python"))


def make_dataset(location, samples):
    from cohort.data import Writer
    w = Writer.create(location, [("x", "array", "float32"), ("label", "label")])
    for i in range(samples):
        w.append({"x": np.full(4, i, np.float32), "label": i})
    w.commit("elastic bench samples")


def run(work, dataset, slots, launcher_flags, *train_args):
    hosts = os.path.join(work, "hosts")
    with open(hosts, "w") as f:
        f.write(slots.replace(",", "\n") + "\n")
    out = os.path.join(work, "out.json")
    for stale in (out, out + ".killed", out + ".grown"):
        if os.path.exists(stale):
            os.unlink(stale)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), COHORT_BUILD_DIR=BUILD)
    args = [a.replace("HOSTS", hosts) for a in train_args]
    proc = subprocess.run([os.path.join(BUILD, "cohort"), "run", "--host-discovery-script",
                           "cat " + hosts, "--min-np", "2", "--timeout", "30",
                           "--timeout-secs", "120", *launcher_flags, "--", sys.executable, TRAIN, dataset, out,
                           *args], env=env, capture_output=True, text=True, timeout=150)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    with open(out) as f:
        record = json.load(f)
    return record


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--np", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cluster", help="state dir of a tools/cluster cluster of 2+ hosts")
    args = parser.parse_args()
    flags = []
    full = "127.0.0.1:%d" % args.np
    less = "127.0.0.1:%d" % (args.np - 1)
    if args.cluster:
        cluster = dict(line.split("=", 1) for line in subprocess.run(
            [os.path.join(REPO, "tools", "cluster"), "env", "--state-dir", args.cluster],
            capture_output=True, text=True, check=True).stdout.splitlines())
        a, b = cluster["CLUSTER_ADDRS"].strip('"').split()[:2]
        half = args.np // 2
        full = "%s:%d,%s:%d" % (a, half, b, args.np - half)
        less = "%s:%d,%s:%d" % (a, half, b, args.np - half - 1)
        flags = ["--ssh-command", "ssh -F %s/ssh_config" % args.cluster,
                 "--network-interface", cluster["CLUSTER_NAME"] + "-br,eth0",
                 "-x", "PYTHONPATH", "-x", "COHORT_BUILD_DIR"]
    work = tempfile.mkdtemp(prefix="cohort-elastic-bench-")
    dataset = os.path.join(work, "ds")
    make_dataset(dataset, 400)
    death, grow = [], []
    for i in range(args.repeats):
        record = run(work, dataset, full, flags, "--kill", "1:3")
        with open(os.path.join(work, "out.json.killed")) as f:
            death.append(record["resumed"][0] - float(f.read()))
        record = run(work, dataset, less, flags, "--grow", "3:HOSTS:" + full)
        with open(os.path.join(work, "out.json.grown")) as f:
            grow.append(record["resumed"][0] - float(f.read()))
        print("run %d: death -> next step %.2f s, new host -> its first step %.2f s" %
              (i, death[-1], grow[-1]), flush=True)
    print("np %d, medians of %d: death -> next step %.2f s, new host -> first step %.2f s" %
          (args.np, args.repeats, statistics.median(death), statistics.median(grow)))


if __name__ == "__main__":
    main()
