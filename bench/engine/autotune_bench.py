#!/usr/bin/python3
"""autotune_bench.py: COHORT_AUTOTUNE against the defaults and a hand grid.

ResNet-50's 161 gradient tensors (25.6 M float32) submitted to the engine in
backward order each step (`cohort bench engine --model resnet50`) on NP ranks
of this host, run REPS times interleaved with:
  defaults   no tuning settings
  autotune   COHORT_AUTOTUNE=1; the timed steps start after tuning ended
             (--warmup covers it; the run fails if the log has no final row)
  grid       every COHORT_FUSION_THRESHOLD x COHORT_SHM_SINGLE_COPY_BYTES of
             the hand grid below, other settings at their defaults
Each run prints the median engine step of its timed steps (slowest rank);
the table gives each configuration's median over the repetitions and its
ratio to the best grid point's median, and the same for the fastest run
(on a shared machine the fastest run is the one least disturbed). Usage:
  bench/engine/autotune_bench.py [--reps 3] [--np 2] [--build-dir build]
      [--steps 30] [--steps-per-sample 5] [--delay-us 0]
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

FUSION = ["1M", "4M", "16M", "64M"]
SINGLE_COPY = ["1M", "64M"]


def run(cohort, np, steps, warmup, delay_us, env):
    cmd = [cohort, "run", "-np", str(np), "--", cohort, "bench", "engine", "--model", "resnet50",
           "--steps", str(steps), "--warmup", str(warmup), "--delay-us", str(delay_us)]
    out = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True,
                         timeout=600)
    m = re.search(r"engine_step_us ([0-9.]+)", out.stdout)
    if out.returncode != 0 or not m:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), out.stdout, out.stderr))
    return float(m.group(1))


def final_row(path):
    with open(path) as f:
        rows = [r for r in csv.DictReader(f) if r["event"] == "final"]
    if not rows:
        sys.exit("autotune did not finish within the warm-up steps: " + path)
    r = rows[0]
    return "fusion %s, cycle %s ms, small %s, single-copy %s" % (
        r["fusion_threshold_bytes"], r["cycle_time_ms"], r["small_message_bytes"],
        r["single_copy_bytes"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--build-dir", default="build")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--steps-per-sample", type=int, default=5)
    p.add_argument("--delay-us", type=float, default=0)
    a = p.parse_args()
    cohort = os.path.abspath(os.path.join(a.build_dir, "cohort"))
    # 3 warm-up samples and 20 samples, each after one skipped step, and margin.
    tune_warmup = (3 + 20) * (a.steps_per_sample + 1) + 20
    configs = [("defaults", {})]
    configs.append(("autotune", {"COHORT_AUTOTUNE": "1",
                                 "COHORT_AUTOTUNE_STEPS_PER_SAMPLE": str(a.steps_per_sample)}))
    for f in FUSION:
        for s in SINGLE_COPY:
            configs.append(("fusion=%s single_copy=%s" % (f, s),
                            {"COHORT_FUSION_THRESHOLD": f, "COHORT_SHM_SINGLE_COPY_BYTES": s}))
    times = {name: [] for name, _ in configs}
    choices = []
    work = tempfile.mkdtemp()
    print("# autotune benchmark: resnet50 gradients, %d ranks, %s, %d reps, %d timed steps, "
          "delay %g us; engine step in us (median of timed steps, slowest rank)" %
          (a.np, time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()), a.reps, a.steps, a.delay_us))
    print("# load average at start: %.1f" % os.getloadavg()[0])
    for rep in range(a.reps):
        for name, env in configs:
            env = dict(env)
            warmup = 5
            if name == "autotune":
                env["COHORT_AUTOTUNE_LOG"] = os.path.join(work, "autotune.%d.csv" % rep)
                warmup = tune_warmup
            times[name].append(run(cohort, a.np, a.steps, warmup, a.delay_us, env))
            if name == "autotune":
                choices.append(final_row(env["COHORT_AUTOTUNE_LOG"]))
    med = {name: statistics.median(v) for name, v in times.items()}
    grid = {n: t for n, t in med.items() if n.startswith("fusion=")}
    best = min(grid, key=grid.get)
    print("# load average at end: %.1f" % os.getloadavg()[0])
    fastest = {name: min(v) for name, v in times.items()}
    best_min = min(t for n, t in fastest.items() if n.startswith("fusion="))
    print("%-30s %10s %8s %10s %8s  %s" % ("config", "median_us", "vs_best", "min_us", "vs_best",
                                          "runs"))
    for name, _ in configs:
        print("%-30s %10.0f %8.3f %10.0f %8.3f  %s" % (
            name, med[name], med[name] / grid[best], fastest[name], fastest[name] / best_min,
            " ".join("%.0f" % t for t in times[name])))
    print("# best of grid: %s" % best)
    for rep, c in enumerate(choices):
        print("# autotune choice, rep %d: %s" % (rep, c))


if __name__ == "__main__":
    main()
