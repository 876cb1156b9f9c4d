"""Regret vs compute on real learning curves on sklearn's bundled digits data,
epochs as the resource (1..27, reduction 3). Tasks (--task):

  sgd   an SGD classifier (sklearn's SGDClassifier, logistic loss, one
        partial_fit pass per epoch)
  mlp   an MLP (64 -> hidden -> 10, ReLU) trained with SGD + momentum and
        weight decay on minibatches, one pass over the training set per epoch

Methods:

  cohort-random-full   cohort random search, every trial trained 27 epochs
  cohort-asha          cohort ASHA (pause/resume: a promoted trial continues
                       from its own model), random sampler
  cohort-hyperband     cohort Hyperband, random sampler
  optuna-sha           Optuna RandomSampler + SuccessiveHalvingPruner
  optuna-hyperband     Optuna RandomSampler + HyperbandPruner

Compute is the number of epochs trained. Quality is the best validation error
of a model trained to the full 27 epochs so far. Trials run one at a time.

    /usr/bin/python3 bench/sweep/learning_curves.py --task mlp --seeds 20 --out lc.json
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
SPACES = {
    "sgd": {"alpha": {"type": "float", "low": 1e-7, "high": 1e-1, "log": True},
            "eta0": {"type": "float", "low": 1e-5, "high": 1.0, "log": True},
            "learning_rate": {"type": "categorical", "values": ["constant", "invscaling"]},
            "penalty": {"type": "categorical", "values": ["l2", "l1"]}},
    "mlp": {"lr": {"type": "float", "low": 1e-4, "high": 1.0, "log": True},
            "momentum": {"type": "float", "low": 0.0, "high": 0.99},
            "hidden": {"type": "int", "low": 8, "high": 256, "log": True},
            "weight_decay": {"type": "float", "low": 1e-6, "high": 1e-1, "log": True},
            "batch_size": {"type": "categorical", "values": [16, 32, 64, 128]}},
}


def suggest(trial, space):
    """Optuna's suggestion of every parameter of a cohort.sweep space."""
    p = {}
    for name, s in space.items():
        if s["type"] == "categorical":
            p[name] = trial.suggest_categorical(name, s["values"])
        elif s["type"] == "int":
            p[name] = trial.suggest_int(name, s["low"], s["high"], log=s.get("log", False))
        else:
            p[name] = trial.suggest_float(name, s["low"], s["high"], log=s.get("log", False))
    return p


class SgdModel:
    def __init__(self, params, classes):
        self.model = SGDClassifier(loss="log_loss", alpha=params["alpha"], eta0=params["eta0"],
                                   learning_rate=params["learning_rate"],
                                   penalty=params["penalty"], random_state=0)
        self.classes = classes

    def epoch(self, x, y, index):
        order = np.random.default_rng(index).permutation(len(y))
        self.model.partial_fit(x[order], y[order], classes=self.classes)

    def error(self, x, y):
        return 1.0 - self.model.score(x, y)


class MlpModel:
    """64 -> hidden -> 10 with ReLU, softmax cross-entropy, SGD with momentum
    and weight decay as torch.optim.SGD does it; in numpy (about 5x less
    CPU than torch at these sizes, where per-call overhead dominates)."""

    def __init__(self, params, classes):
        rng = np.random.default_rng(0)  # the same initial weights for a configuration
        h, k = params["hidden"], len(classes)
        self.w = [rng.uniform(-1, 1, (64, h)) / 8.0, rng.uniform(-1, 1, h) / 8.0,
                  rng.uniform(-1, 1, (h, k)) / np.sqrt(h), rng.uniform(-1, 1, k) / np.sqrt(h)]
        self.m = [np.zeros_like(w) for w in self.w]
        self.lr, self.mom, self.wd = params["lr"], params["momentum"], params["weight_decay"]
        self.batch = params["batch_size"]

    def forward(self, x):
        a = np.maximum(x @ self.w[0] + self.w[1], 0)
        return a, a @ self.w[2] + self.w[3]

    def epoch(self, x, y, index):
        order = np.random.default_rng(index).permutation(len(y))
        with np.errstate(all="ignore"):  # a diverging configuration ends as NaN: its error is 1
            for i in range(0, len(order), self.batch):
                xb, yb = x[order[i:i + self.batch]], y[order[i:i + self.batch]]
                a, z = self.forward(xb)
                p = np.exp(z - z.max(1, keepdims=True))
                p /= p.sum(1, keepdims=True)
                p[np.arange(len(yb)), yb] -= 1
                dz = p / len(yb)
                da = (dz @ self.w[2].T) * (a > 0)
                grads = [xb.T @ da, da.sum(0), a.T @ dz, dz.sum(0)]
                for w, m, g in zip(self.w, self.m, grads):
                    m *= self.mom
                    m += g + self.wd * w
                    w -= self.lr * m

    def error(self, x, y):
        with np.errstate(all="ignore"):
            return float(np.mean(self.forward(x)[1].argmax(1) != y))


class Curves:
    """Trains each configuration lazily, epoch by epoch, and keeps its model
    (so a resumed trial continues where it stopped) and its error per epoch."""

    def __init__(self, task):
        x, y = load_digits(return_X_y=True)
        xtr, xva, self.ytr, self.yva = train_test_split(x, y, test_size=0.3, random_state=0)
        scaler = StandardScaler().fit(xtr)
        self.xtr, self.xva = scaler.transform(xtr), scaler.transform(xva)
        self.classes = np.unique(y)
        self.make = {"sgd": SgdModel, "mlp": MlpModel}[task]
        self.cache = {}

    def error(self, params, epoch):
        key = tuple(sorted(params.items()))
        if key not in self.cache:
            self.cache[key] = (self.make(params, self.classes), [])
        model, errors = self.cache[key]
        while len(errors) < epoch:
            model.epoch(self.xtr, self.ytr, len(errors))
            errors.append(model.error(self.xva, self.yva))
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


def run_cohort(curves, space, algorithm, trials, seed):
    study = sweep.Study(parameters=space, algorithm=algorithm, seed=seed,
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


def run_optuna(curves, space, pruner, trials, seed):
    log = Log()

    def objective(trial):
        p = suggest(trial, space)
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
    ap.add_argument("--task", choices=sorted(SPACES), default="sgd")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--full-trials", type=int, default=27, help="random search at full budget")
    ap.add_argument("--trials", type=int, default=81, help="ASHA/Hyperband/pruner trials")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    curves, space = Curves(args.task), SPACES[args.task]
    results = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        start = time.time()
        runs = {
            "cohort-random-full": lambda: run_cohort(curves, space, "random", args.full_trials,
                                                     seed),
            "cohort-asha": lambda: run_cohort(curves, space, "asha", args.trials, seed),
            "cohort-hyperband": lambda: run_cohort(curves, space, "hyperband", args.trials, seed),
            "optuna-sha": lambda: run_optuna(curves, space, optuna.pruners.SuccessiveHalvingPruner(
                min_resource=MIN_EPOCHS, reduction_factor=ETA), args.trials, seed),
            "optuna-hyperband": lambda: run_optuna(curves, space, optuna.pruners.HyperbandPruner(
                min_resource=MIN_EPOCHS, max_resource=MAX_EPOCHS, reduction_factor=ETA),
                args.trials, seed),
        }
        for name, run in runs.items():
            log = run()
            results.append({"task": args.task, "method": name, "seed": seed,
                            "points": log.points})
        print("seed %d: %.1fs" % (seed, time.time() - start), flush=True)
        with open(args.out, "w") as f:
            json.dump(results, f)


if __name__ == "__main__":
    main()
