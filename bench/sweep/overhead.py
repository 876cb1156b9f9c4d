"""Ask/tell overhead vs history: the time of one ask() + tell() once a study
holds N completed trials, cohort's TPE (through cohort.sweep, the Python
binding) against Optuna's TPESampler. Space: 3 floats (one log) and a
categorical; objective: a cheap quadratic (its cost is not measured).

    /usr/bin/python3 bench/sweep/overhead.py --sizes 1000,10000 --repeats 50

cohort's history is built by the study itself (every trial asked through
TPE); Optuna's with study.add_trials (the same number of finished trials, no
sampling cost to build it)."""
import argparse
import math
import random
import statistics
import time

import optuna

from cohort import sweep

optuna.logging.set_verbosity(optuna.logging.WARNING)

SPACE = {"a": {"type": "float", "low": -5, "high": 5},
         "b": {"type": "float", "low": 1e-4, "high": 1, "log": True},
         "c": {"type": "float", "low": 0, "high": 1},
         "d": {"type": "categorical", "values": ["x", "y", "z"]}}


def objective(p):
    return p["a"] ** 2 + (math.log10(p["b"]) + 2) ** 2 + p["c"] + (p["d"] != "y")


def cohort_times(sizes, repeats):
    study = sweep.Study(parameters=SPACE, algorithm="tpe", seed=0,
                        budget={"trials": max(sizes) + repeats * len(sizes) + 10})
    out, done = {}, 0
    for n in sorted(sizes):
        while done < n:
            t = study.ask()
            study.tell(t, objective(t.params))
            done += 1
        times = []
        for _ in range(repeats):
            start, cpu = time.perf_counter(), time.process_time()
            t = study.ask()
            study.tell(t, objective(t.params))
            times.append((time.perf_counter() - start, time.process_time() - cpu))
            done += 1
        out[n] = (statistics.median(w for w, _ in times), statistics.median(c for _, c in times))
    return out


def asha_times(sizes, repeats):
    """ASHA (rungs 1..27, eta 3): one ask + the report that ends the trial's
    run (at its rung), once N trials have reported; promotions included."""
    study = sweep.Study(parameters=SPACE, algorithm="asha", seed=0,
                        budget={"trials": 10 ** 9, "min_resource": 1, "max_resource": 27,
                                "reduction": 3})
    out, done = {}, 0

    def one():
        t = study.ask()
        step = t.resource
        while study.report(t, objective(t.params) / step, step) == "continue" and step < 27:
            step = min(27, step * 3)  # the rung it was promoted to

    for n in sorted(sizes):
        while done < n:
            one()
            done += 1
        times = []
        for _ in range(repeats):
            start, cpu = time.perf_counter(), time.process_time()
            one()
            times.append((time.perf_counter() - start, time.process_time() - cpu))
            done += 1
        out[n] = (statistics.median(w for w, _ in times), statistics.median(c for _, c in times))
    return out


def optuna_times(sizes, repeats):
    dists = {"a": optuna.distributions.FloatDistribution(-5, 5),
             "b": optuna.distributions.FloatDistribution(1e-4, 1, log=True),
             "c": optuna.distributions.FloatDistribution(0, 1),
             "d": optuna.distributions.CategoricalDistribution(["x", "y", "z"])}
    rng = random.Random(0)
    out = {}
    for n in sorted(sizes):
        study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0))
        trials = []
        for _ in range(n):
            p = {"a": rng.uniform(-5, 5), "b": 10 ** rng.uniform(-4, 0), "c": rng.random(),
                 "d": rng.choice(["x", "y", "z"])}
            trials.append(optuna.trial.create_trial(params=p, distributions=dists, value=objective(p)))
        study.add_trials(trials)
        times = []
        for _ in range(repeats):
            start, cpu = time.perf_counter(), time.process_time()
            t = study.ask(dists)
            study.tell(t, objective(t.params))
            times.append((time.perf_counter() - start, time.process_time() - cpu))
        out[n] = (statistics.median(w for w, _ in times), statistics.median(c for _, c in times))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--optuna-repeats", type=int, default=10)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    c = cohort_times(sizes, args.repeats)
    a = asha_times(sizes, args.repeats)
    o = optuna_times(sizes, args.optuna_repeats)
    print("ms per trial, wall / CPU (process time), medians of %d (Optuna: %d)"
          % (args.repeats, args.optuna_repeats))
    print()
    print("| completed trials | cohort TPE ask+tell | cohort ASHA ask+report | Optuna TPE ask+tell |")
    print("|---|---|---|---|")
    for n in sizes:
        print("| %d | %.3f / %.3f | %.3f / %.3f | %.1f / %.1f |" % (
            n, c[n][0] * 1e3, c[n][1] * 1e3, a[n][0] * 1e3, a[n][1] * 1e3, o[n][0] * 1e3, o[n][1] * 1e3))


if __name__ == "__main__":
    main()
