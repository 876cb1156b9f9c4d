#!/usr/bin/python3
"""compare.py: helper of run_peers.sh (stdlib only): plans the iteration
counts of the peer benchmark, waits for an idle machine, and turns the raw
outputs of cohort / Open MPI / gloo into one table of medians.

Subcommands:
  plan  -b MIN -e MAX -f F [--budget B] [--nmin A] [--nmax Z]
        prints one line "MIN MAX WARMUP ITERS" per invocation (see plan()).
  idle  [--threshold 0.15] [--max-wait 120]
        waits until the other processes leave the CPUs nearly idle;
        prints the busy fraction seen last; exit 1 if it gave up waiting.
  run   --out FILE --err FILE [--retries 2] [--max-others 0.25] [--max-wait 120]
        [--no-wait] -- COMMAND...
        waits for an idle machine, runs COMMAND, and measures how much CPU
        other processes took meanwhile; a run disturbed by them is retried
        (see run()). Appends the accepted attempt's stdout/stderr to the files.
  table --results DIR --np N [--reps R] [--memcpy FILE] [--header TEXT]
        reads DIR/<tool>.<rep>.out (tool in cohort, mpi, gloo) and prints
        the combined table of median times and bus bandwidths.
"""
import argparse
import glob
import resource
import signal
import subprocess
import math
import os
import re
import statistics
import sys
import time

TOOLS = [("cohort", "cohort"), ("mpi", "Open MPI"), ("gloo", "gloo")]


def parse_size(text):
    """Parses '4096', '4K', '64M', '1G' (binary multiples, as nccl-tests)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip()
    scale = units.get(text[-1:].upper(), 1)
    return int(text[:-1] if scale != 1 else text) * scale


def sweep(min_bytes, max_bytes, factor):
    size = min_bytes
    while size <= max_bytes:
        yield size
        size *= factor


def iterations(size, budget, nmin, nmax):
    """The iteration rule, the same for every tool: each size moves about
    `budget` bytes per repetition (n = budget / size), rounded down to a
    power of 4 so that neighbouring sizes share a count and run in one
    invocation, clamped to [nmin, nmax]. Warm-up: max(2, n / 8) calls."""
    n = max(1, budget // size)
    n = 4 ** int(math.floor(math.log(n, 4) + 1e-9))
    n = max(nmin, min(nmax, n))
    return max(2, n // 8), n


def plan(args):
    """Groups consecutive sizes with the same (warmup, iters) into one
    invocation: `-b first -e last -f factor -w warmup -n iters`."""
    bands = []
    for size in sweep(args.b, args.e, args.f):
        w, n = iterations(size, args.budget, args.nmin, args.nmax)
        if bands and bands[-1][2:] == [w, n]:
            bands[-1][1] = size
        else:
            bands.append([size, size, w, n])
    for band in bands:
        print(*band)
    return 0


def cpu_times():
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields[:8]), idle


def busy_fraction(seconds=1.0):
    total0, idle0 = cpu_times()
    time.sleep(seconds)
    total1, idle1 = cpu_times()
    total = max(1, total1 - total0)
    return 1.0 - (idle1 - idle0) / total


def idle(args):
    """Waits (up to --max-wait seconds) until the CPUs are busy less than
    --threshold, so another job's compile does not pollute a measurement."""
    start = time.monotonic()
    busy = busy_fraction()
    if busy > args.threshold:
        sys.stderr.write("     machine busy (%.0f%% of the CPUs used by others); waiting up to"
                         " %ds...\n" % (100 * busy, args.max_wait))
        while busy > args.threshold and time.monotonic() - start < args.max_wait:
            busy = busy_fraction()
        sys.stderr.write("     %s after %.0fs\n" % (
            "idle" if busy <= args.threshold else "still busy, going on", time.monotonic() - start))
    print("%.2f" % busy)
    return 0 if busy <= args.threshold else 1


def children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(args):
    """Runs one benchmark invocation, guarding it against a busy machine:
    it waits (unless --no-wait) for idle CPUs first, then compares the CPU
    time all processes used during the run (/proc/stat) with the CPU time of
    the command's own process tree (rusage of waited-for children). When the
    others took more than --max-others of one CPU on average, the attempt is
    discarded and retried, up to --retries times; the last attempt is kept
    either way, with a warning. Exit status: the command's."""
    command = args.cmd
    if command and command[0] == "--":
        command = command[1:]
    hz = os.sysconf("SC_CLK_TCK")
    for attempt in range(args.retries + 1):
        if not args.no_wait:
            wait_args = argparse.Namespace(threshold=0.15, max_wait=args.max_wait)
            with open(os.devnull, "w") as devnull:
                saved, sys.stdout = sys.stdout, devnull
                try:
                    idle(wait_args)
                finally:
                    sys.stdout = saved
        total0, idle0 = cpu_times()
        own0 = children_cpu_seconds()
        start = time.monotonic()
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the command's own process group only
            stdout, stderr = proc.communicate()
            stderr += b"\n# compare.py: timed out after %ds\n" % args.timeout
            sys.stderr.write("     timed out after %ds\n" % args.timeout)
            disturbed = False
            break
        wall = time.monotonic() - start
        total1, idle1 = cpu_times()
        busy = ((total1 - total0) - (idle1 - idle0)) / hz
        others = max(0.0, busy - (children_cpu_seconds() - own0)) / max(wall, 1e-3)
        disturbed = others > args.max_others
        last = attempt == args.retries
        sys.stderr.write("     %.1fs, others used %.0f%% of a CPU%s\n" % (
            wall, 100 * others,
            "" if not disturbed else (" -> retrying" if not last else " (kept: out of retries)")))
        if not disturbed or last or proc.returncode != 0:
            break
    if disturbed:
        stderr += (DISTURBED + " (others used %.0f%% of a CPU): %s\n"
                   % (100 * others, " ".join(command))).encode()
    with open(args.out, "ab") as f:
        f.write(stdout)
    with open(args.err, "ab") as f:
        f.write(stderr)
    return proc.returncode if proc.returncode >= 0 else 128 - proc.returncode


DISTURBED = "# compare.py: kept a run disturbed by other processes"


PREFIX = re.compile(r"^\[(\d+)\]\s?")


def parse_output(path):
    """Returns {size: (time_us, busbw, wrong)} from one nccl-tests style output.
    A leading "[0] " (the cohort launcher's rank prefix) is stripped and
    lines of other ranks are skipped; lines
    starting with '#' and lines that are not 8+ numeric-looking columns
    (logs, banners) are ignored."""
    rows = {}
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            prefix = PREFIX.match(line)
            if prefix:
                if prefix.group(1) != "0":
                    continue  # only rank 0 reports
                line = line[prefix.end():]
            if not line or line.startswith("#"):
                continue
            cols = line.split()
            if len(cols) < 8:
                continue
            try:
                size, time_us, busbw = int(cols[0]), float(cols[4]), float(cols[6])
                int(cols[1])
            except ValueError:
                continue
            try:
                wrong = int(cols[7])
            except ValueError:
                wrong = -1  # "N/A" or the like: not checked
            rows[size] = (time_us, busbw, wrong)
    return rows


def fmt(value, spec):
    return ("%" + spec) % value if value is not None else "-"


def table(args):
    factor = 2.0 * (args.np - 1) / args.np if args.np > 1 else 1.0
    results = {}  # tool -> size -> list of (time_us, wrong)
    runs = {}
    for tool, _ in TOOLS:
        files = sorted(glob.glob(os.path.join(args.results, "%s.*.out" % tool)))
        if not files:
            continue
        runs[tool] = len(files)
        per_size = results.setdefault(tool, {})
        for path in files:
            for size, (time_us, _busbw, wrong) in parse_output(path).items():
                per_size.setdefault(size, []).append((time_us, wrong))

    def median(tool, size):
        """(median time in us, bus bandwidth at that time, reps, any wrong)."""
        samples = results.get(tool, {}).get(size)
        if not samples:
            return None, None, 0, False
        t = statistics.median(s[0] for s in samples)
        busbw = size / (t * 1e-6) / 1e9 * factor if t > 0 else None
        return t, busbw, len(samples), any(s[1] != 0 for s in samples)

    sizes = sorted({s for tool in results.values() for s in tool})
    out = []
    if args.header:
        out.extend("# " + line for line in args.header.splitlines())
    out.append("# allreduce float32 sum in place, %d ranks; time = median over repetitions of the"
               " average time per call on the slowest rank (us);" % args.np)
    out.append("# busbw = size / time * 2(n-1)/n (GB/s); ratios: busbw cohort/peer (>1: cohort"
               " faster), time cohort/MPI (<1: cohort faster)")
    out.append("# repetitions parsed: " + ", ".join(
        "%s %d" % (name, runs.get(tool, 0)) for tool, name in TOOLS))
    def row(first, cells, ratios):
        """One line of the table; the header uses the same widths."""
        text = "%11s" % first
        for time_text, bw_text, mark in cells:
            text += " | %10s %7s%1s" % (time_text, bw_text, mark)
        return text + " | %7s %8s | %8s" % ratios

    out.append("#" + row("", [("cohort", "", ""), ("Open MPI", "", ""), ("gloo", "", "")],
                         ("busbw", "ratio", "time"))[1:])
    out.append("#" + row("size (B)", [("time (us)", "busbw", "")] * 3,
                         ("coh/MPI", "coh/gloo", "coh/MPI"))[1:])
    notes = []
    for size in sizes:
        m = {tool: median(tool, size) for tool, _ in TOOLS}
        cells = []
        for tool, name in TOOLS:
            t, bw, reps, wrong = m[tool]
            cells.append((fmt(t, ".2f"), fmt(bw, ".2f"), "!" if wrong else ""))
            if wrong:
                notes.append("# ! %s: nonzero #wrong at %d B in at least one repetition"
                             % (name, size))
            if t is not None and runs.get(tool) and reps < runs[tool]:
                notes.append("# %s: %d B present in only %d of %d repetitions"
                             % (name, size, reps, runs[tool]))

        def ratio(a, b):
            return a / b if a is not None and b else None

        c, p, g = m["cohort"], m["mpi"], m["gloo"]
        out.append(row(str(size), cells, (fmt(ratio(c[1], p[1]), ".2f"),
                                          fmt(ratio(c[1], g[1]), ".2f"),
                                          fmt(ratio(c[0], p[0]), ".2f"))))
    for path in sorted(glob.glob(os.path.join(args.results, "*.err"))):
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith(DISTURBED) or line.startswith("# compare.py: timed out"):
                    notes.append("# %s: %s" % (os.path.basename(path)[:-4], line[2:].strip()))
    out.extend(notes)
    if args.memcpy and os.path.exists(args.memcpy):
        with open(args.memcpy) as f:
            for line in f:
                if line.strip():
                    out.append("# reference: " + line.strip())
    print("\n".join(out))
    # A wrong result anywhere fails the run, so the smoke test catches it.
    return 3 if any(line.startswith("# ! ") for line in notes) else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan")
    p.add_argument("-b", type=parse_size, required=True)
    p.add_argument("-e", type=parse_size, required=True)
    p.add_argument("-f", type=int, required=True)
    p.add_argument("--budget", type=parse_size, default=parse_size("2G"),
                   help="bytes moved per size per repetition (default 2G)")
    p.add_argument("--nmin", type=int, default=4)
    p.add_argument("--nmax", type=int, default=1024)
    p = sub.add_parser("idle")
    p.add_argument("--threshold", type=float, default=0.15)
    p.add_argument("--max-wait", type=int, default=120)
    p = sub.add_parser("run")
    p.add_argument("--out", required=True)
    p.add_argument("--err", required=True)
    p.add_argument("--retries", type=int, default=2)
    p.add_argument("--max-others", type=float, default=0.25,
                   help="CPUs (fraction of one) others may use during a kept run")
    p.add_argument("--max-wait", type=int, default=120)
    p.add_argument("--no-wait", action="store_true")
    p.add_argument("--timeout", type=int, default=900,
                   help="seconds before the command's process group is killed")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    p = sub.add_parser("table")
    p.add_argument("--results", required=True)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--memcpy")
    p.add_argument("--header", default="")
    args = parser.parse_args()
    if args.command == "plan":
        if args.f < 2 or args.b < 4 or args.e < args.b or args.nmin < 1 or args.nmax < args.nmin:
            parser.error("plan: need -f >= 2, 4 <= -b <= -e, 1 <= nmin <= nmax")
        return plan(args)
    if args.command == "idle":
        return idle(args)
    if args.command == "run":
        return run(args)
    return table(args)


if __name__ == "__main__":
    sys.exit(main())
