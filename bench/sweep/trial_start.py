"""Where a sweep trial's start goes, and what a warm start (cohort.warm)
saves: each trial is `cohort run -np 2 -- COMMAND` (what `cohort sweep`
runs), COMMAND the TPE example's trial (bench/sweep/digits_trial.py: imports
torch, sklearn and cohort.torch, trains ~0.5 s). Prints medians of --repeats
runs of each step, alternating so both sides see the same load, then one
TPE sweep each way (--trials trials, one at a time) with its seconds per
trial.

    COHORT_BUILD_DIR=build PYTHONPATH=python /usr/bin/python3 bench/sweep/trial_start.py
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(HERE, "..", "..", "build"))
COHORT = os.path.join(BUILD, "cohort")
TRIAL = os.path.join(HERE, "digits_trial.py")
PY = sys.executable
WARM = [PY, "-m", "cohort.warm", "--preload", "torch,sklearn.datasets,cohort.torch", "--idle",
        "60", "--"]

STEPS = [
    ("python3 -c pass", [PY, "-c", "pass"]),
    ("import torch", [PY, "-c", "import torch"]),
    ("import torch, sklearn, cohort.torch",
     [PY, "-c", "import torch, sklearn.datasets, cohort.torch"]),
    ("cohort run -np 2 -- true", [COHORT, "run", "-np", "2", "--", "true"]),
    ("trial, cold: cohort run -np 2 -- python3 digits_trial.py",
     [COHORT, "run", "-np", "2", "--", PY, TRIAL]),
    ("trial, warm: cohort run -np 2 -- python3 -m cohort.warm ... digits_trial.py",
     [COHORT, "run", "-np", "2", "--", *WARM, TRIAL]),
]

SPEC = """name: %s
command: %s
workers: 2
metric: {name: accuracy, mode: max}
algorithm: tpe
budget: {trials: %d, concurrent: 1}
seed: 0
parameters:
  lr: {type: float, low: 0.01, high: 1.0, log: true}
"""


def seconds(cmd):
    start = time.monotonic()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    if done.returncode != 0:
        sys.exit("%s exited %d:\n%s" % (" ".join(cmd), done.returncode, done.stdout.decode()))
    return time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--sweeps-only", action="store_true", help="skip the steps' table")
    args = parser.parse_args()
    seconds(STEPS[-1][1])  # the warm server's own start is not a trial's
    times = {name: [] for name, _ in STEPS}
    if args.sweeps_only:
        args.repeats = 0
    for _ in range(args.repeats):
        for name, cmd in STEPS:
            times[name].append(seconds(cmd))
    if args.repeats:
        print("| step | median s | runs |")
        print("|---|---|---|")
    for name, _ in STEPS if args.repeats else ():
        print("| %s | %.2f | %s |" % (name, statistics.median(times[name]),
                                      " ".join("%.2f" % t for t in times[name])))
    with tempfile.TemporaryDirectory() as tmp:
        for name, command in (("cold", [PY, TRIAL]), ("warm", [*WARM, TRIAL])):
            spec = os.path.join(tmp, name + ".yaml")
            with open(spec, "w") as f:
                f.write(SPEC % ("start-" + name, json.dumps(command), args.trials))
            if name == "warm":
                seconds(STEPS[-1][1])  # the server may have gone idle during the cold sweep
            total = seconds([COHORT, "sweep", spec, "--dir", os.path.join(tmp, name)])
            print("TPE sweep, %s: %d trials in %.1f s, %.2f s per trial"
                  % (name, args.trials, total, total / args.trials))


if __name__ == "__main__":
    main()
