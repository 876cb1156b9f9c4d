#!/usr/bin/python3
"""gloo_one_by_one.py: the engine benchmark's peer. Reduces a model's gradient
tensors one by one with torch.distributed's gloo backend (2 processes on this
host), as a training loop without a fusing engine would, and prints the
median step time.

Usage: gloo_one_by_one.py SHAPES_FILE [-np 2] [--steps 10] [--warmup 3]
SHAPES_FILE: `cohort bench engine --print-shapes` output (name dims..., backward order).
"""
import argparse
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def read_shapes(path):
    shapes = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts:
                shapes.append([int(d) for d in parts[1:]])
    return shapes


def worker(rank, args, port, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.np)
    tensors = [torch.ones(s, dtype=torch.float32) for s in read_shapes(args.shapes)]
    times = []
    for step in range(args.warmup + args.steps):
        dist.barrier()
        t0 = time.perf_counter()
        for t in tensors:
            dist.all_reduce(t)
            t /= args.np  # average, as cohort's engine benchmark does
        if step >= args.warmup:
            times.append((time.perf_counter() - t0) * 1e6)
    median = torch.tensor([statistics.median(times)], dtype=torch.float64)
    dist.all_reduce(median, op=dist.ReduceOp.MAX)  # the slowest rank, like cohort bench
    if rank == 0:
        out.put(median.item())
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes")
    parser.add_argument("-np", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, args, port, out)) for r in range(args.np)]
    for p in procs:
        p.start()
    result = out.get(timeout=600)
    for p in procs:
        p.join(timeout=60)
    print("gloo_step_us %.1f" % result)
    return 0 if all(p.exitcode == 0 for p in procs) else 1


if __name__ == "__main__":
    sys.exit(main())
