"""Median and quartiles of simple regret at given trial counts, from
regret_vs_trials.py's JSON: one row per function, noise and optimizer."""
import argparse
import collections
import json

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--at", default="50,100")
    args = ap.parse_args()
    with open(args.results) as f:
        results = json.load(f)
    at = [int(a) for a in args.at.split(",")]
    groups = collections.defaultdict(list)
    for r in results:
        groups[(r["function"], r["noisy"], r["optimizer"])].append(r["regret"])
    print("| function | noisy | optimizer | seeds | " +
          " | ".join("regret@%d median [q1, q3]" % n for n in at) + " |")
    print("|---|---|---|---|" + "---|" * len(at))
    for (fn, noisy, opt), curves in sorted(groups.items()):
        cells = []
        for n in at:
            v = np.array([c[min(n, len(c)) - 1] for c in curves])
            q1, med, q3 = np.percentile(v, [25, 50, 75])
            cells.append("%.4g [%.4g, %.4g]" % (med, q1, q3))
        print("| %s | %s | %s | %d | %s |" % (fn, "yes" if noisy else "no", opt, len(curves),
                                              " | ".join(cells)))


if __name__ == "__main__":
    main()
