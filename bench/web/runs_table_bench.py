#!/usr/bin/env python3
"""The dashboard's runs table with 10,000 runs in headless chromium: a fresh
`cohort server` (SQLite in a temp directory), the runs of bench_track's search
benchmark (two params, a metric, a tag each), then bench/web/runs_table.mjs
loads the project's table --repeats times. Prints the medians (ms): first rows
drawn, all runs loaded (server-side sorted pages of 1000), last row drawn after
scrolling to the end, and how many row elements the DOM holds (virtualized).
Usage:
  COHORT_BUILD_DIR=build PYTHONPATH=python /usr/bin/python3 bench/web/runs_table_bench.py
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "track"))
from bench_track import Client, setup_runs  # noqa: E402
from tracking_server_fixture import TrackingServer  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = TrackingServer(Path(tmp))
        try:
            start = time.perf_counter()
            eid = setup_runs(Client(server.port), server.port, args.runs)
            print(f"created {args.runs} runs in {time.perf_counter() - start:.1f} s", flush=True)
            out = subprocess.run(["node", str(ROOT / "bench" / "web" / "runs_table.mjs"), server.url, eid,
                                  str(args.runs), str(args.repeats)],
                                 check=True, capture_output=True, text=True, timeout=600).stdout
        finally:
            server.stop()
    samples = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    for s in samples:
        print(s)
    load = os.getloadavg()[0]
    med = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
    print(f"runs table, {args.runs} runs, median of {len(samples)}: first rows {med['firstRows']:.0f} ms, "
          f"all loaded {med['allLoaded']:.0f} ms, last row after scroll {med['lastRow']:.0f} ms, "
          f"{med['domRows']:.0f} row elements in the DOM, {med['searchMs']:.0f} ms of it in runs/search "
          f"requests (load average {load:.1f})")


if __name__ == "__main__":
    main()
