"""How long a process whose collective failed takes to exit, cohort's
torch.distributed backend beside gloo (issue 32): NP ranks started here with
env:// init; the last rank leaves after the first all_reduce (os._exit), the
others raise in the next one and exit through the uncaught exception. Prints
the seconds from each survivor's raise to its exit, and their median.

    PYTHONPATH=python COHORT_BUILD_DIR=build /usr/bin/python3 \\
        bench/torch/c10d_failed_exit.py --backend cohort --np 3 --runs 5

(--worker is the per-rank entry.)"""
import argparse
import datetime
import os
import socket
import statistics
import subprocess
import sys
import time


def worker(backend):
    import torch
    import torch.distributed as dist
    if backend == "cohort":
        import cohort.torch.distributed  # noqa: F401
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=30))
    dist.all_reduce(torch.ones(4))
    if dist.get_rank() == dist.get_world_size() - 1:
        os._exit(3)
    try:
        dist.all_reduce(torch.ones(4))
    except RuntimeError:
        print("RAISED_AT %.6f" % time.time(), flush=True)
        raise


def one_run(backend, np):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(np):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(np),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker", backend], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      text=True))
    seconds = []
    for r, p in enumerate(procs):
        out, _ = p.communicate(timeout=120)
        exited = time.time()
        if r < np - 1:
            raised = [float(line.split()[1]) for line in out.splitlines()
                      if line.startswith("RAISED_AT")]
            if not raised:
                raise SystemExit("rank %d never raised" % r)
            seconds.append(exited - raised[0])
    return seconds


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=("cohort", "gloo"), default="cohort")
    p.add_argument("--np", type=int, default=3)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--worker", default="")
    args = p.parse_args()
    if args.worker:
        worker(args.worker)
        return
    seconds = []
    for _ in range(args.runs):
        seconds += one_run(args.backend, args.np)
    print("%s, %d ranks: %s s; median %.2f s" % (
        args.backend, args.np, " ".join("%.2f" % s for s in sorted(seconds)),
        statistics.median(seconds)))


if __name__ == "__main__":
    main()
