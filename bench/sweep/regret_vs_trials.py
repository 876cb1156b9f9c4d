"""Simple regret vs trials: cohort's TPE and random search against Optuna's
TPESampler and RandomSampler (python3-optuna), same budget, same seeds.

    /usr/bin/python3 bench/sweep/regret_vs_trials.py --seeds 20 --trials 100 --out results.json

Every run writes the best-so-far regret after each trial (the noise-free value
of the trial whose *observed* value is best). Needs PYTHONPATH=python and
COHORT_BUILD_DIR (the build with cohort._sweep)."""
import argparse
import json
import time

import numpy as np
import optuna

from functions import FUNCTIONS
from cohort import sweep

optuna.logging.set_verbosity(optuna.logging.WARNING)


def curve(true_values, observed):
    best_obs, best_true, out = float("inf"), None, []
    for t, o in zip(true_values, observed):
        if o < best_obs:
            best_obs, best_true = o, t
        out.append(best_true)
    return out


def run_cohort(algorithm, fn, bounds, trials, seed, noise, rng):
    params = {"x%d" % i: {"type": "float", "low": lo, "high": hi} for i, (lo, hi) in enumerate(bounds)}
    study = sweep.Study(parameters=params, algorithm=algorithm, seed=seed, budget={"trials": trials})
    true, obs = [], []
    while (t := study.ask()) is not None:
        x = [t.params["x%d" % i] for i in range(len(bounds))]
        v = fn(x)
        o = v + (rng.normal(0, noise) if noise else 0)
        study.tell(t, o)
        true.append(v)
        obs.append(o)
    return true, obs


def run_optuna(sampler, fn, bounds, trials, noise, rng):
    study = optuna.create_study(sampler=sampler)
    true, obs = [], []

    def objective(trial):
        x = [trial.suggest_float("x%d" % i, lo, hi) for i, (lo, hi) in enumerate(bounds)]
        v = fn(x)
        o = v + (rng.normal(0, noise) if noise else 0)
        true.append(v)
        obs.append(o)
        return o

    study.optimize(objective, n_trials=trials)
    return true, obs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--functions", default=",".join(FUNCTIONS))
    ap.add_argument("--optimizers", default="cohort-tpe,optuna-tpe,cohort-random,optuna-random")
    ap.add_argument("--noise", default="0,1", help="0: noise-free, 1: noisy, or both")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    results = []
    for name in args.functions.split(","):
        fn, bounds, fmin, sigma = FUNCTIONS[name]
        for noisy in map(int, args.noise.split(",")):
            for opt in args.optimizers.split(","):
                start = time.time()
                for seed in range(args.first_seed, args.first_seed + args.seeds):
                    rng = np.random.default_rng(1000 + seed)  # the same noise for every optimizer
                    noise = sigma if noisy else 0
                    if opt == "cohort-tpe":
                        true, obs = run_cohort("tpe", fn, bounds, args.trials, seed, noise, rng)
                    elif opt == "cohort-random":
                        true, obs = run_cohort("random", fn, bounds, args.trials, seed, noise, rng)
                    elif opt == "optuna-tpe":
                        true, obs = run_optuna(optuna.samplers.TPESampler(seed=seed), fn, bounds,
                                               args.trials, noise, rng)
                    elif opt == "optuna-tpe-mv":
                        true, obs = run_optuna(optuna.samplers.TPESampler(seed=seed, multivariate=True),
                                               fn, bounds, args.trials, noise, rng)
                    elif opt == "optuna-random":
                        true, obs = run_optuna(optuna.samplers.RandomSampler(seed=seed), fn, bounds,
                                               args.trials, noise, rng)
                    else:
                        raise SystemExit("unknown optimizer " + opt)
                    results.append({"function": name, "noisy": noisy, "optimizer": opt, "seed": seed,
                                    "regret": [v - fmin for v in curve(true, obs)]})
                print("%-12s noisy=%d %-14s %5.1fs" % (name, noisy, opt, time.time() - start), flush=True)
                with open(args.out, "w") as f:  # after each group: a long run can be cut short
                    json.dump(results, f)


if __name__ == "__main__":
    main()
