"""Plots and tables for docs/performance.md from the JSON that
regret_vs_trials.py and learning_curves.py write.

    /usr/bin/python3 bench/sweep/plot.py --regret r.json [r2.json ...] --curves lc.json --img docs/img

--suffix names the images sweep_regret<SUFFIX>.png and
sweep_learning_curves<SUFFIX>.png.
"""
import argparse
import collections
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

COLORS = {"cohort-tpe": "tab:blue", "optuna-tpe": "tab:orange", "cohort-random": "tab:green",
          "optuna-random": "tab:red", "cohort-random-full": "tab:gray", "cohort-asha": "tab:blue",
          "cohort-hyperband": "tab:cyan", "optuna-sha": "tab:orange", "optuna-hyperband": "tab:red"}


def band(ax, x, curves, label):
    q1, med, q3 = np.percentile(np.array(curves), [25, 50, 75], axis=0)
    ax.plot(x, med, label=label, color=COLORS.get(label))
    ax.fill_between(x, q1, q3, alpha=0.2, color=COLORS.get(label))


def regret(paths, img, suffix):
    results = []
    for p in paths:
        with open(p) as f:
            results += json.load(f)
    groups = collections.defaultdict(list)
    for r in results:
        groups[(r["function"], r["noisy"])].append(r)
    keys = sorted(groups)
    fig, axes = plt.subplots(2, (len(keys) + 1) // 2, figsize=(4 * ((len(keys) + 1) // 2), 7),
                             squeeze=False)
    rows = []
    for ax, key in zip(axes.flat, keys):
        by_opt = collections.defaultdict(list)
        for r in groups[key]:
            by_opt[r["optimizer"]].append(r["regret"])
        for opt in sorted(by_opt):
            n = min(len(c) for c in by_opt[opt])
            curves = [c[:n] for c in by_opt[opt]]
            band(ax, np.arange(1, n + 1), curves, opt)
            for at in (50, 100):
                if at <= n:
                    v = np.array([c[at - 1] for c in curves])
                    rows.append((key[0], key[1], opt, at, len(curves), *np.percentile(v, [50, 25, 75])))
        ax.set_yscale("log")
        ax.set_title("%s%s" % (key[0], " (noisy)" if key[1] else ""))
        ax.set_xlabel("trials")
        ax.set_ylabel("simple regret")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(img + "/sweep_regret%s.png" % suffix, dpi=80)
    print("| function | noisy | optimizer | seeds | regret@50 median [q1, q3] | regret@100 median [q1, q3] |")
    print("|---|---|---|---|---|---|")
    table = collections.defaultdict(dict)
    for fn, noisy, opt, at, seeds, med, q1, q3 in rows:
        table[(fn, noisy, opt, seeds)][at] = "%.4g [%.4g, %.4g]" % (med, q1, q3)
    for (fn, noisy, opt, seeds), cells in sorted(table.items()):
        print("| %s | %s | %s | %d | %s | %s |" % (fn, "yes" if noisy else "no", opt, seeds,
                                                   cells.get(50, "-"), cells.get(100, "-")))


def curves(path, img, suffix):
    with open(path) as f:
        results = json.load(f)
    task = results[0].get("task", "sgd")
    by_method = collections.defaultdict(dict)
    for r in results:
        by_method[r["method"]][r["seed"]] = r["points"]
    seeds = sorted(by_method["cohort-random-full"])
    horizon = max(p[-1][0] for m in by_method.values() for p in m.values())
    grid = np.arange(1, horizon + 1)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    print("| method | seeds | compute (epochs) median | final error median [q1, q3] | "
          "compute to reach random-full's final error, / random-full's compute: median [q1, q3] |")
    print("|---|---|---|---|---|")
    for method in sorted(by_method):
        runs = by_method[method]
        series, ratios, finals, totals = [], [], [], []
        for s in seeds:
            pts = runs[s]
            c = np.array([p[0] for p in pts])
            b = np.array([p[1] for p in pts])
            idx = np.searchsorted(c, grid, side="right") - 1
            series.append(np.where(idx >= 0, b[np.clip(idx, 0, None)], 1.0))
            target = by_method["cohort-random-full"][s][-1][1]
            full = by_method["cohort-random-full"][s][-1][0]
            reach = [p[0] for p in pts if p[1] <= target]
            ratios.append(reach[0] / full if reach else float("inf"))
            finals.append(b[-1])
            totals.append(c[-1])
        band(ax, grid, series, method)
        # "never" (inf) sorts last; quantiles pick an observed value.
        q = np.percentile(np.minimum(ratios, 1e9), [50, 25, 75], method="nearest")
        f = np.percentile(finals, [50, 25, 75])
        cells = ["never" if v >= 1e9 else "%.2f" % v for v in q]
        print("| %s | %d | %d | %.4f [%.4f, %.4f] | %s [%s, %s] |" % (
            method, len(seeds), np.median(totals), f[0], f[1], f[2], *cells))
    ax.set_xscale("log")
    if task == "mlp":  # errors of 1.5-2.5%: a log axis shows them apart
        ax.set_yscale("log")
        ax.set_ylim(0.015, 0.2)
    else:
        ax.set_ylim(0.02, 0.2)
    ax.set_xlabel("compute (epochs trained)")
    ax.set_ylabel("best validation error at 27 epochs")
    model = {"sgd": "SGDClassifier", "mlp": "MLP"}[task]
    ax.set_title("%s on digits: quality vs compute (median, quartiles)" % model)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(img + "/sweep_learning_curves%s.png" % suffix, dpi=80)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--regret", nargs="*", default=[])
    ap.add_argument("--curves")
    ap.add_argument("--img", required=True)
    ap.add_argument("--suffix", default="")
    args = ap.parse_args()
    if args.regret:
        regret(args.regret, args.img, args.suffix)
    if args.curves:
        curves(args.curves, args.img, args.suffix)


if __name__ == "__main__":
    main()
