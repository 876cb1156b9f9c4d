#!/usr/bin/env python3
"""torch.distributed all_reduce on the "cohort" backend vs gloo, in one job:
float32 sum in place, sizes 4 KiB to 256 MiB. Each size runs on both
backends alternately, --reps repetitions; time per call is the slowest
rank's average, the table gives medians and busbw as in nccl-tests
(size / time * 2(n-1)/n).

    build/cohort run -np 2 -- /usr/bin/python3 bench/torch/c10d_allreduce.py \\
        [-b 4K] [-e 256M] [-f 4] [--reps 5]"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist

import c10d_common


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def iterations(size):
    """Enough calls for a stable average without minutes at 256 MiB."""
    return max(2, min(200, (64 << 20) // size * 2))


def c10d_call(group):
    return lambda tensor: dist.all_reduce(tensor, group=group)


def engine_call(tensor):
    """cohort.torch's allreduce_: the same engine without the c10d layer."""
    import cohort.torch as hvd
    hvd.allreduce_(tensor, op=hvd.Sum)


def time_per_call(tensor, call, iters, timer_group):
    for _ in range(max(1, iters // 10)):
        call(tensor)
    dist.barrier(group=timer_group)
    start = time.perf_counter()
    for _ in range(iters):
        call(tensor)
    elapsed = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX, group=timer_group)  # the slowest rank
    return elapsed.item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-b", default="4K")
    parser.add_argument("-e", default="256M")
    parser.add_argument("-f", type=int, default=4)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    gloo = c10d_common.start()
    n, rank = dist.get_world_size(), dist.get_rank()
    factor = 2 * (n - 1) / n
    if rank == 0:
        print("# c10d all_reduce float32 sum in place, %d ranks, torch %s; time = median over %d "
              "repetitions of the slowest rank's average per call (us); busbw GB/s"
              % (n, torch.__version__, args.reps))
        print("# engine: the same allreduce through cohort.torch (no c10d layer), for the "
              "layer's cost")
        print("#  size (B) |  cohort time   busbw |   gloo time   busbw | busbw cohort/gloo | "
              "time cohort/gloo | engine time")
    size = parse_size(args.b)
    while size <= parse_size(args.e):
        tensor = torch.ones(size // 4)
        calls = {"cohort": c10d_call(None), "gloo": c10d_call(gloo), "engine": engine_call}
        times = {name: [] for name in calls}
        for _ in range(args.reps):
            for name, call in calls.items():
                times[name].append(time_per_call(tensor, call, iterations(size), gloo))
        if rank == 0:
            t_c, t_g, t_e = (statistics.median(times[k]) for k in ("cohort", "gloo", "engine"))
            bw_c, bw_g = size / t_c * factor / 1e9, size / t_g * factor / 1e9
            print("%11d | %11.2f %7.2f | %11.2f %7.2f | %17.2f | %16.3f | %11.2f"
                  % (size, t_c * 1e6, bw_c, t_g * 1e6, bw_g, bw_c / bw_g, t_c / t_g, t_e * 1e6),
                  flush=True)
        del tensor
        size *= args.f
    c10d_common.finish()


if __name__ == "__main__":
    main()
