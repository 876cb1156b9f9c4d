#!/usr/bin/python3
"""single_copy.py: one-host allreduce busbw of cohort's single-copy path
(COHORT_SHM_SINGLE_COPY=auto with COHORT_SHM_SINGLE_COPY_BYTES=1, so every
row takes it) on buffers from cohort::AllocateSharedMemory, which the peers
map ("zero": plain loads and stores, no system call) and on ordinary buffers
("single": process_vm_readv/writev), against its two-copy shared-memory path
(COHORT_SHM_SINGLE_COPY=off, ordinary buffers) and one core's memcpy, all in
one run, interleaved (rep 1: zero, single, two, memcpy; rep 2: ...), so
drift on the machine falls on all alike. Prints one table per rank count of
median times and busbw, with the ratios to memcpy.

Usage (from the repository root, after building cohort into build/):
  bench/peers/single_copy.py [-b 1M] [-e 1G] [-f 4] [-r 5] [--np 2,4]
                             [--budget 2G] [--build-dir build] [--no-wait] [--max-wait S]

Iteration counts follow run_peers.sh (compare.py `plan`); each invocation
waits for idle CPUs and is retried when other processes took CPU meanwhile
(compare.py `run`). busbw = size / time x 2(n-1)/n, time being the average
per call on the slowest rank (cohort bench); memcpy is bytes copied per
second by one core (memcpy_bandwidth.c, median of 11 copies of 256 MiB).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (the peer benchmark's planner, guard and parser)

# (name, COHORT_SHM_SINGLE_COPY, extra `cohort bench` flags)
PATHS = [("zero", "auto", ["--shared-memory"]), ("single", "auto", []), ("two", "off", [])]


def bands(args):
    out = []
    for size in compare.sweep(args.b, args.e, args.f):
        w, n = compare.iterations(size, args.budget, 4, 1024)
        if out and out[-1][2:] == [w, n]:
            out[-1][1] = size
        else:
            out.append([size, size, w, n])
    return out


def guarded(args, out, err, cmd, env=None):
    """Runs cmd under compare.py's idle-machine guard, appending to out/err."""
    full = [sys.executable, os.path.join(HERE, "compare.py"), "run", "--out", out, "--err", err,
            "--max-wait", str(args.max_wait)] + (
                ["--no-wait", "--retries", "0"] if args.no_wait else []) + [
            "--", *cmd]
    return subprocess.run(full, env=env).returncode


def memcpy_rate(path):
    with open(path) as f:
        m = re.search(r"memcpy 1 core: ([0-9.]+) GB/s", f.read())
    return float(m.group(1)) if m else None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("-b", type=compare.parse_size, default=compare.parse_size("1M"))
    p.add_argument("-e", type=compare.parse_size, default=compare.parse_size("1G"))
    p.add_argument("-f", type=int, default=4)
    p.add_argument("-r", "--reps", type=int, default=5)
    p.add_argument("--np", default="2,4")
    p.add_argument("--budget", type=compare.parse_size, default=compare.parse_size("2G"))
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--no-wait", action="store_true",
                   help="do not wait for idle CPUs nor rerun disturbed invocations")
    p.add_argument("--max-wait", type=int, default=120, help="longest wait for idle CPUs (s)")
    p.add_argument("--table", metavar="DIR",
                   help="run nothing: print the table of the raw outputs a run left in DIR "
                        "(its cohort-single-copy.* folder, e.g. of a run stopped early)")
    args = p.parse_args()
    cohort = os.path.join(os.path.abspath(args.build_dir), "cohort")
    work = args.table or tempfile.mkdtemp(prefix="cohort-single-copy.")
    print("== raw outputs in %s" % work, file=sys.stderr)
    memcpy = os.path.join(work, "memcpy_bandwidth")
    if not args.table:
        subprocess.run(["cc", "-O3", "-o", memcpy, os.path.join(HERE, "memcpy_bandwidth.c")],
                       check=True)
    nps = [int(x) for x in args.np.split(",")]
    plan = bands(args)
    failed = 0
    with open("/proc/loadavg") as f:
        load_before = " ".join(f.read().split()[:3])
    for rep in range(1, 0 if args.table else args.reps + 1):
        for np_ in nps:
            for name, mode, flags in PATHS:
                print("== rep %d/%d: %d ranks, %s copy" % (rep, args.reps, np_, name),
                      file=sys.stderr)
                # From 1 byte on, so rows below the default threshold show the cut-over.
                env = dict(os.environ, COHORT_SHM_SINGLE_COPY=mode,
                           COHORT_SHM_SINGLE_COPY_BYTES="1")
                out = os.path.join(work, "%s.%d.%d.out" % (name, np_, rep))
                for b, e, w, n in plan:
                    cmd = [cohort, "run", "-np", str(np_), "--", cohort, "bench", "allreduce",
                           "-b", str(b), "-e", str(e), "-f", str(args.f), "-w", str(w),
                           "-n", str(n), "-d", "float32", "-o", "sum"] + flags
                    failed |= guarded(args, out, out + ".err", cmd, env) != 0
        guarded(args, os.path.join(work, "memcpy.%d" % rep), os.path.join(work, "memcpy.err"), [memcpy])
    with open("/proc/loadavg") as f:
        load_after = " ".join(f.read().split()[:3])
    rates = [r for r in (memcpy_rate(os.path.join(work, "memcpy.%d" % rep))
                         for rep in range(1, args.reps + 1)
                         if os.path.exists(os.path.join(work, "memcpy.%d" % rep))) if r]
    mem = statistics.median(rates) if rates else None
    print("# cohort allreduce float32 sum in place on one host: zero-copy (shared-memory buffers,"
          " COHORT_SHM_SINGLE_COPY=auto) vs single copy (ordinary buffers, =auto) vs two copies"
          " (=off) vs one core's memcpy")
    print("# command: bench/peers/single_copy.py -b %d -e %d -f %d -r %d --np %s --budget %d"
          % (args.b, args.e, args.f, args.reps, args.np, args.budget))
    print("# %d CPUs, load average before %s, after %s" % (os.cpu_count(), load_before, load_after))
    print("# time: median over the reps (up to %d) of the average per call on the slowest rank"
          " (us); busbw = size/time x 2(n-1)/n (GB/s)" % args.reps)
    if mem:
        print("# memcpy 1 core: %.2f GB/s (median of the %d reps' medians; min %.2f, max %.2f)"
              % (mem, len(rates), min(rates), max(rates)))
    for np_ in nps:
        factor = 2.0 * (np_ - 1) / np_
        print("#\n# %d ranks" % np_)
        names = [name for name, _, _ in PATHS]
        print("# %11s |" % "size (B)" + "".join(" %10s %7s |" % (n + " us", "busbw") for n in names)
              + "".join(" %8s" % (n + "/memcpy") for n in names))
        med = {}
        for name in names:
            samples = {}
            for rep in range(1, args.reps + 1):
                path = os.path.join(work, "%s.%d.%d.out" % (name, np_, rep))
                if not os.path.exists(path):
                    continue
                for size, (t, _bw, wrong) in compare.parse_output(path).items():
                    samples.setdefault(size, []).append(t)
                    if wrong not in (0, -1):
                        print("# ! %s copy: %d wrong elements at %d B" % (name, wrong, size))
                        failed = 1
            med[name] = {s: statistics.median(v) for s, v in samples.items()}
            print("# %s copy: %d reps" % (name, max((len(v) for v in samples.values()),
                                                    default=0)))
        for size in sorted(set().union(*(med[n].keys() for n in names))):
            bws = {}
            row = "  %11d |" % size
            for n in names:
                t = med[n].get(size)
                bws[n] = size / (t * 1e-6) / 1e9 * factor if t else None
                row += " %10.1f %7.2f |" % (t or 0, bws[n] or 0)
            row += "".join(" %8s" % ("%.2f" % (bws[n] / mem) if bws[n] and mem else "-")
                           for n in names)
            print(row)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
