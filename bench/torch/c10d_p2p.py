#!/usr/bin/env python3
"""torch.distributed send/recv on the "cohort" backend vs gloo, in one job of
2 ranks: a ping-pong of float32 tensors (rank 0 sends, rank 1 sends the same
bytes back), sizes 4 B to 64 MiB. Each size runs on both backends
alternately, --reps repetitions; latency is half the median round trip, bandwidth
the size over that one-way time.

    build/cohort run -np 2 -- /usr/bin/python3 bench/torch/c10d_p2p.py \\
        [-b 4] [-e 64M] [-f 4] [--reps 5]"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist

import c10d_common
from c10d_allreduce import parse_size


def iterations(size):
    return max(4, min(1000, (256 << 20) // max(size, 1) // 4))


def one_way_seconds(tensor, group, iters):
    """Half the average round trip of `iters` ping-pongs."""
    peer = 1 - dist.get_rank()
    def round_trip():
        if dist.get_rank() == 0:
            dist.send(tensor, peer, group=group)
            dist.recv(tensor, peer, group=group)
        else:
            dist.recv(tensor, peer, group=group)
            dist.send(tensor, peer, group=group)
    for _ in range(max(1, iters // 10)):
        round_trip()
    start = time.perf_counter()
    for _ in range(iters):
        round_trip()
    return (time.perf_counter() - start) / iters / 2


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-b", default="4")
    parser.add_argument("-e", default="64M")
    parser.add_argument("-f", type=int, default=4)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    gloo = c10d_common.start()
    if dist.get_world_size() != 2:
        raise SystemExit("c10d_p2p.py: run it on 2 ranks")
    groups = {"cohort": None, "gloo": gloo}
    size, end = parse_size(args.b), parse_size(args.e)
    rows = []
    while size <= end:
        tensor = torch.ones(max(size // 4, 1))
        times = {name: [] for name in groups}
        for _ in range(args.reps):
            for name, group in groups.items():
                times[name].append(one_way_seconds(tensor, group, iterations(size)))
        rows.append((tensor.numel() * 4, {k: statistics.median(v) for k, v in times.items()}))
        size *= args.f
    if dist.get_rank() == 0:
        print("# c10d send/recv ping-pong float32, 2 ranks, torch %s; one-way time = half the "
              "median round trip over %d repetitions (us); bandwidth GB/s" % (torch.__version__,
                                                                                args.reps))
        print("%12s %12s %10s %12s %10s %8s" % ("bytes", "cohort_us", "cohort_GBs", "gloo_us",
                                               "gloo_GBs", "speedup"))
        for nbytes, t in rows:
            c, g = t["cohort"], t["gloo"]
            print("%12d %12.1f %10.3f %12.1f %10.3f %8.2f" % (nbytes, c * 1e6, nbytes / c / 1e9,
                                                             g * 1e6, nbytes / g / 1e9, g / c),
                  flush=True)
    c10d_common.finish()


if __name__ == "__main__":
    main()
