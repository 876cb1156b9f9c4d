#!/usr/bin/python3
"""compression_accuracy.py: test accuracy of examples/pytorch_digits.py (a
small CNN on scikit-learn's digits, 2 workers under `cohort run`) trained
with each gradient compression for the same epochs and seeds, side by side.
PowerSGD and top-k run with @rank (compressed on every rank: on one host
the default scope would average uncompressed).
Prints per compression the accuracy of every seed, their mean, and the
difference to uncompressed training in points.

Usage (from the repository root, after building cohort into build/):
  bench/torch/compression_accuracy.py [--np 2] [--epochs 12] [--seeds 1,2,3]
      [--compressions none,fp16,powersgd1,powersgd2,powersgd4,topk1]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(args, compression, seed):
    cmd = [os.path.join(args.build_dir, "cohort"), "run", "-np", str(args.np), "--timeout", "120",
           "--", "/usr/bin/python3", os.path.join(ROOT, "examples", "pytorch_digits.py"),
           "--no-track", "--min-accuracy", "0", "--epochs", str(args.epochs), "--seed",
           str(seed), "--compression",
           compression + ("@rank" if compression.startswith(("powersgd", "topk")) else "")]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), COHORT_BUILD_DIR=args.build_dir)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    for line in out.stdout.splitlines():
        if "result: " in line:
            return json.loads(line.split("result: ", 1)[1])
    sys.exit("compression_accuracy: no result from %s (seed %d):\n%s%s"
             % (compression, seed, out.stdout[-2000:], out.stderr[-2000:]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--compressions", default="none,fp16,powersgd1,powersgd2,powersgd4,topk1")
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    args = p.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    names = args.compressions.split(",")
    acc = {c: [] for c in names}
    for seed in seeds:  # interleaved, so drift falls on all alike
        for c in names:
            acc[c].append(100 * run(args, c, seed)["test_accuracy"])
    print("# examples/pytorch_digits.py, %d workers, %d epochs, seeds %s; test accuracy (%%)"
          % (args.np, args.epochs, args.seeds))
    print("# command: bench/torch/compression_accuracy.py --np %d --epochs %d --seeds %s "
          "--compressions %s" % (args.np, args.epochs, args.seeds, args.compressions))
    base = statistics.mean(acc["none"]) if "none" in acc else None
    print("%-12s %-24s %7s %9s" % ("compression", "per seed", "mean", "vs none"))
    for c in names:
        mean = statistics.mean(acc[c])
        print("%-12s %-24s %7.2f %9s" % (c, " ".join("%.2f" % a for a in acc[c]), mean,
                                          "%+.2f" % (mean - base) if base is not None else "-"))


if __name__ == "__main__":
    main()
