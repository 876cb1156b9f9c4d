#!/usr/bin/env python3
"""Tokens/s and per-rank memory of examples/gpt_parallel.py in each layout:
parameter and optimizer-state bytes on every rank against the ideal share
1/(pp*tp) of the unsharded model's (plus, on the last stage, the copy of the
tied embedding; ZeRO: the optimizer state also /dp), and tokens/s (the
median of --runs runs; each run times its steps after the first).

    /usr/bin/python3 bench/parallel/layouts.py [--runs 3] [--steps 6]

Runs each layout with `build/cohort run` (the unsharded model in one plain
process) and prints one markdown table."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("COHORT_BUILD_DIR", os.path.join(ROOT, "build"))
MODEL = ["--width", "128", "--layers", "16", "--heads", "8", "--seq-len", "64", "--vocab", "256",
         "--batch-size", "8", "--micro-batches", "4"]
LAYOUTS = [  # (ranks, flags)
    (1, []),
    (2, ["--dp", "2"]),
    (2, ["--pp", "2"]),
    (2, ["--pp", "2", "--schedule", "interleaved", "--virtual-stages", "2"]),
    (2, ["--tp", "2"]),
    (2, ["--tp", "2", "--sequence-parallel"]),
    (4, ["--pp", "4"]),
    (4, ["--tp", "4"]),
    (4, ["--pp", "2", "--tp", "2"]),
    (4, ["--dp", "2", "--pp", "2"]),
    (4, ["--dp", "2", "--pp", "2", "--zero", "1"]),
    (4, ["--dp", "2", "--tp", "2", "--zero", "2"]),
]


def run(ranks, flags, steps):
    env = dict(os.environ, COHORT_BUILD_DIR=BUILD, PYTHONPATH=os.path.join(ROOT, "python"))
    command = [sys.executable, os.path.join(ROOT, "examples", "gpt_parallel.py"), *MODEL,
               "--steps", str(steps), *flags]
    if ranks > 1 or flags:
        command = [os.path.join(BUILD, "cohort"), "run", "-np", str(ranks), "--"] + command
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise SystemExit(out.stdout + out.stderr)
    return json.loads(re.findall(r"result: (.*)$", out.stdout, re.M)[-1])


def flag(flags, name, default=1):
    return int(flags[flags.index(name) + 1]) if name in flags else default


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    whole = None
    print("GPT width 128, 16 blocks, 8 heads, vocabulary 256, sequence 64, batch 8 (4 "
          "micro-batches), AdamW, stages balanced by parameters; tokens/s: medians of %d runs "
          "of %d steps\n" % (args.runs, args.steps))
    print("| layout | ranks | tokens/s | params per rank (KiB) | ideal (KiB) | worst / ideal | "
          "optimizer per rank (KiB) | ideal (KiB) | worst / ideal |")
    print("|---|---|---|---|---|---|---|---|---|")
    for ranks, flags in LAYOUTS:
        results = [run(ranks, flags, args.steps) for _ in range(args.runs)]
        r = results[0]
        speed = statistics.median(x["tokens_per_sec"] for x in results)
        if whole is None:
            whole = r
        pp, tp = flag(flags, "--pp"), flag(flags, "--tp")
        dp = ranks // (pp * tp)
        zero = flag(flags, "--zero", 0)
        tied = 256 * 128 * 4 // tp if pp > 1 else 0  # the head's copy of the embedding (bytes)
        ideal_params = whole["param_bytes"][0] / (pp * tp)
        ideal_opt = whole["optimizer_bytes"][0] / (pp * tp) / (dp if zero else 1)
        # Ranks are placed tp fastest, then dp, then pp: the last stage is the last dp*tp ranks.
        last = [rank // (dp * tp) == pp - 1 for rank in range(ranks)]
        worst_p = max(b / (ideal_params + tied * is_last)
                      for b, is_last in zip(r["param_bytes"], last))
        worst_o = max(b / (ideal_opt + 2 * tied * is_last / (dp if zero else 1))
                      for b, is_last in zip(r["optimizer_bytes"], last))
        name = r["layout"] + ("" if r.get("schedule", "1f1b") == "1f1b" else
                              " %s v=%d" % (r["schedule"], r["virtual_stages"]))
        name += " ZeRO-%d" % zero if zero else ""
        name += " SP" if "--sequence-parallel" in flags else ""
        print("| %s | %d | %.0f | %s | %.0f (+%.0f tied) | %.3f | %s | %.0f | %.3f |" % (
            name, ranks, speed, ", ".join("%.0f" % (b / 1024) for b in r["param_bytes"]),
            ideal_params / 1024, tied / 1024, worst_p,
            ", ".join("%.0f" % (b / 1024) for b in r["optimizer_bytes"]), ideal_opt / 1024,
            worst_o), flush=True)


if __name__ == "__main__":
    main()
