#!/usr/bin/env python3
"""cohort's DistributedOptimizer vs torch DistributedDataParallel on gloo:
the same synthetic ResNet training (synthetic_training.py) on --np workers
with one thread each, alternated --reps times; prints the median images/s
per worker of each and the ratio cohort/ddp.

    /usr/bin/python3 bench/torch/compare_ddp.py [--reps 3] [--build-dir build] \\
        [-- extra synthetic_training.py flags, e.g. --image-size 64]"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "synthetic_training.py")


def result_of(output):
    lines = [l.split("result: ", 1)[1] for l in output.splitlines() if "result: " in l]
    if len(lines) != 1:
        raise RuntimeError("no result line in the benchmark's output:\n" + output)
    return json.loads(lines[0])["img_sec_per_worker"]


def run_cohort(build, np, extra, timeout):
    env = dict(os.environ, COHORT_BUILD_DIR=build, PYTHONPATH=os.path.join(ROOT, "python"))
    out = subprocess.run([os.path.join(build, "cohort"), "run", "-np", str(np), "--",
                          sys.executable, WORKER, "--backend", "cohort", *extra],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=timeout, check=True).stdout
    return result_of(out)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ddp(np, extra, timeout):
    port = str(free_port())
    procs = []
    for rank in range(np):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(np), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=port, LOCAL_RANK=str(rank))
        procs.append(subprocess.Popen([sys.executable, WORKER, "--backend", "ddp", *extra],
                                      env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=timeout)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, out in zip(procs, outputs):
        if p.returncode != 0:
            raise RuntimeError("ddp worker failed (status %d):\n%s" % (p.returncode, out))
    return result_of(outputs[0])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--timeout", type=float, default=300, help="seconds per run")
    p.add_argument("extra", nargs="*", help="flags for synthetic_training.py (after --)")
    args = p.parse_args()
    build = os.path.abspath(args.build_dir)
    cohort_rates, ddp_rates = [], []
    for rep in range(args.reps):
        print("== repetition %d/%d" % (rep + 1, args.reps), file=sys.stderr, flush=True)
        cohort_rates.append(run_cohort(build, args.np, args.extra, args.timeout))
        ddp_rates.append(run_ddp(args.np, args.extra, args.timeout))
        print("   cohort %.1f img/s/worker, ddp-gloo %.1f" % (cohort_rates[-1], ddp_rates[-1]),
              file=sys.stderr, flush=True)
    c, d = statistics.median(cohort_rates), statistics.median(ddp_rates)
    print("# %d workers, 1 thread each, %d repetitions (median); images/s per worker" %
          (args.np, args.reps))
    print("cohort_img_sec %.1f" % c)
    print("ddp_gloo_img_sec %.1f" % d)
    print("ratio_cohort_over_ddp %.3f" % (c / d))


if __name__ == "__main__":
    main()
