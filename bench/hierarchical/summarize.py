#!/usr/bin/env python3
"""Tables of median time and bus bandwidth for pairs of benchmark variants.

Reads RESULTS/<variant>.<rep>.out (cohort bench allreduce outputs, parsed
like bench/peers/compare.py does) and prints, for each --pair A B NP, one row
per message size: the median over repetitions of A's and B's time per call
(slowest rank, us), the busbw at that time (size / time * 2(NP-1)/NP, GB/s),
and the ratio busbw A / busbw B (> 1: A faster). Exit status 3 when any
repetition reported wrong elements.
"""
import argparse
import glob
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
from compare import DISTURBED, parse_output  # noqa: E402


def samples(results, variant):
    """size -> list of (time_us, wrong) over the repetitions of `variant`."""
    per_size = {}
    for path in sorted(glob.glob(os.path.join(results, "%s.*.out" % variant))):
        for size, (time_us, _busbw, wrong) in parse_output(path).items():
            per_size.setdefault(size, []).append((time_us, wrong))
    return per_size


def pair_table(results, a, b, np):
    factor = 2.0 * (np - 1) / np if np > 1 else 1.0
    sa, sb = samples(results, a), samples(results, b)
    lines = ["# %s vs %s, %d ranks: median time (us) and busbw (GB/s) over repetitions" % (a, b, np),
             "# %10s | %12s %7s %4s | %12s %7s %4s | %9s" % (
                 "size (B)", a + " time", "busbw", "reps", b + " time", "busbw", "reps",
                 "busbw " + a + "/" + b)]
    wrong = False
    for size in sorted(set(sa) | set(sb)):
        cells, bws = [], []
        for s in (sa.get(size, []), sb.get(size, [])):
            if not s:
                cells.append("%12s %7s %4d" % ("-", "-", 0))
                bws.append(None)
                continue
            t = statistics.median(x[0] for x in s)
            bw = size / (t * 1e-6) / 1e9 * factor if t > 0 else None
            wrong = wrong or any(x[1] != 0 for x in s)
            cells.append("%12.0f %7.3f %4d" % (t, bw or 0, len(s)))
            bws.append(bw)
        ratio = "%9.2f" % (bws[0] / bws[1]) if bws[0] and bws[1] else "%9s" % "-"
        lines.append("  %10d | %s | %s | %s" % (size, cells[0], cells[1], ratio))
    return lines, wrong


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", required=True)
    parser.add_argument("--pair", nargs=3, action="append", metavar=("A", "B", "NP"), required=True)
    parser.add_argument("--header", default="")
    args = parser.parse_args()
    out = ["# " + line for line in args.header.splitlines()]
    any_wrong = False
    for a, b, np in args.pair:
        lines, wrong = pair_table(args.results, a, b, int(np))
        out.extend(lines)
        any_wrong = any_wrong or wrong
    for path in sorted(glob.glob(os.path.join(args.results, "*.err"))):
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith(DISTURBED):
                    out.append("# %s: %s" % (os.path.basename(path)[:-4], line[2:].strip()))
    if any_wrong:
        out.append("# ! some repetition reported wrong elements")
    print("\n".join(out))
    return 3 if any_wrong else 0


if __name__ == "__main__":
    sys.exit(main())
