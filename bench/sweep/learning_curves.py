"""Regret vs compute on real learning curves: an SGD classifier (sklearn's
SGDClassifier, logistic loss, one partial_fit pass per epoch) on sklearn's
bundled digits data, epochs as the resource (1..27, reduction 3). Methods:

  cohort-random-full   cohort random search, every trial trained 27 epochs
  cohort-asha          cohort ASHA (pause/resume: a promoted trial continues
                       from its own model), random sampler
  cohort-hyperband     cohort Hyperband, random sampler
  optuna-sha           Optuna RandomSampler + SuccessiveHalvingPruner
  optuna-hyperband     Optuna RandomSampler + HyperbandPruner

Compute is the number of epochs trained. Quality is the best validation error
of a model trained to the full 27 epochs so far. Trials run one at a time.

    /usr/bin/python3 bench/sweep/learning_curves.py --seeds 10 --out lc.json
"""
import argparse
import json
import time

import numpy as np
import optuna
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from cohort import sweep

optuna.logging.set_verbosity(optuna.logging.WARNING)

MAX_EPOCHS, MIN_EPOCHS, ETA = 27, 1, 3
SPACE = {"alpha": {"type": "float", "low": 1e-7, "high": 1e-1, "log": True},
         "eta0": {"type": "float", "low": 1e-5, "high": 1.0, "log": True},
         "learning_rate": {"type": "categorical", "values": ["constant", "invscaling"]},
         "penalty": {"type": "categorical", "values": ["l2", "l1"]}}


class Curves:
    """Trains each configuration lazily, epoch by epoch, and keeps its model
    (so a resumed trial continues where it stopped) and its error per epoch."""

    def __init__(self):
        x, y = load_digits(return_X_y=True)
        xtr, xva, self.ytr, self.yva = train_test_split(x, y, test_size=0.3, random_state=0)
        scaler = StandardScaler().fit(xtr)
        self.xtr, self.xva = scaler.transform(xtr), scaler.transform(xva)
        self.classes = np.unique(y)
        self.cache = {}

    def error(self, params, epoch):
        key = tuple(sorted(params.items()))
        if key not in self.cache:
            model = SGDClassifier(loss="log_loss", alpha=params["alpha"], eta0=params["eta0"],
                                  learning_rate=params["learning_rate"], penalty=params["penalty"],
                                  random_state=0)
            self.cache[key] = (model, [])
        model, errors = self.cache[key]
        while len(errors) < epoch:
            order = np.random.default_rng(len(errors)).permutation(len(self.ytr))
            model.partial_fit(self.xtr[order], self.ytr[order], classes=self.classes)
            errors.append(1.0 - model.score(self.xva, self.yva))
        return errors[epoch - 1]


class Log:
    """Compute so far and the best full-budget error after each epoch."""

    def __init__(self):
        self.compute, self.best, self.points = 0, 1.0, []

    def epoch(self, error, epoch):
        self.compute += 1
        if epoch == MAX_EPOCHS:
            self.best = min(self.best, error)
        self.points.append((self.compute, self.best))


def run_cohort(curves, algorithm, trials, seed):
    study = sweep.Study(parameters=SPACE, algorithm=algorithm, seed=seed,
                        budget={"trials": trials, "min_resource": MIN_EPOCHS,
                                "max_resource": MAX_EPOCHS, "reduction": ETA})
    log, done = Log(), {}
    while (t := study.ask()) is not None:
        epoch = done.get(t.id, 0)  # a resumed trial continues from its own model
        decision = "continue"
        while decision == "continue" and epoch < MAX_EPOCHS:
            epoch += 1
            e = curves.error(t.params, epoch)
            log.epoch(e, epoch)
            decision = study.report(t, e, epoch)
        done[t.id] = epoch
        if algorithm in ("random", "tpe"):
            study.tell(t, e)
    return log


def run_optuna(curves, pruner, trials, seed):
    log = Log()

    def objective(trial):
        p = {"alpha": trial.suggest_float("alpha", 1e-7, 1e-1, log=True),
             "eta0": trial.suggest_float("eta0", 1e-5, 1.0, log=True),
             "learning_rate": trial.suggest_categorical("learning_rate", ["constant", "invscaling"]),
             "penalty": trial.suggest_categorical("penalty", ["l2", "l1"])}
        for epoch in range(1, MAX_EPOCHS + 1):
            e = curves.error(p, epoch)
            log.epoch(e, epoch)
            trial.report(e, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return e

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed), pruner=pruner)
    study.optimize(objective, n_trials=trials)
    return log


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--full-trials", type=int, default=27, help="random search at full budget")
    ap.add_argument("--trials", type=int, default=81, help="ASHA/Hyperband/pruner trials")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    curves = Curves()
    results = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        start = time.time()
        runs = {
            "cohort-random-full": lambda: run_cohort(curves, "random", args.full_trials, seed),
            "cohort-asha": lambda: run_cohort(curves, "asha", args.trials, seed),
            "cohort-hyperband": lambda: run_cohort(curves, "hyperband", args.trials, seed),
            "optuna-sha": lambda: run_optuna(curves, optuna.pruners.SuccessiveHalvingPruner(
                min_resource=MIN_EPOCHS, reduction_factor=ETA), args.trials, seed),
            "optuna-hyperband": lambda: run_optuna(curves, optuna.pruners.HyperbandPruner(
                min_resource=MIN_EPOCHS, max_resource=MAX_EPOCHS, reduction_factor=ETA),
                args.trials, seed),
        }
        for name, run in runs.items():
            log = run()
            results.append({"method": name, "seed": seed, "points": log.points})
        print("seed %d: %.1fs" % (seed, time.time() - start), flush=True)
        with open(args.out, "w") as f:
            json.dump(results, f)


if __name__ == "__main__":
    main()
