"""Allreduce of CUDA tensors through cohort.torch beside torch.distributed's
gloo with the same CUDA tensors, and a device-to-device copy of the same
bytes, in one run on one machine (issue 27's peer comparison). Run under
`cohort run -np N` (tools/device-check.sh does, with 2 ranks sharing a GPU):

    cohort run -np 2 -- python3 bench/gpu/torch_allreduce_bench.py [--max 256M] [--iters 10]

Prints nccl-tests columns per size and peer (time is the median of
--iters after 2 warm-ups; busbw = algbw * 2 (n-1)/n); rank 0 prints.
Without CUDA it says so and exits 0 (nothing to measure)."""
import argparse
import datetime
import os
import statistics
import time

import torch


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def median_seconds(fn, iters):
    for _ in range(2):
        fn()
    times = []
    for _ in range(iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--min", default="4K")
    parser.add_argument("--max", default="256M")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--peers", default="cohort,gloo")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("# no CUDA device: nothing to measure (torch.cuda.is_available() is False)")
        return
    import cohort.torch as hvd
    import torch.distributed as dist
    import cohort.torch.distributed  # noqa: F401  registers the backend, sets env:// defaults
    hvd.init()
    n, rank = hvd.size(), hvd.rank()
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    dev = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    peers = args.peers.split(",")
    if rank == 0:
        print("# device: %s; %d ranks; torch %s; transport %s" % (
            torch.cuda.get_device_name(dev), n, torch.__version__,
            os.environ.get("COHORT_GPU_TRANSPORT", "auto")))
        print("#%10s %8s %12s %10s %10s %10s" % ("size", "peer", "time(us)", "algbw", "busbw",
                                                  "d2d GB/s"))
    size = parse_size(args.min)
    while size <= parse_size(args.max):
        x = torch.ones(size // 4, device=dev)
        y = torch.empty_like(x)
        d2d = size / median_seconds(lambda: y.copy_(x), args.iters) / 1e9
        for peer in peers:
            if peer == "cohort":
                def step():
                    hvd.allreduce_(x, op=hvd.Sum, name="bench.%d" % size)
            else:
                def step():
                    dist.all_reduce(x)
            t = median_seconds(step, args.iters)
            algbw = size / t / 1e9
            if rank == 0:
                print("%11d %8s %12.1f %10.2f %10.2f %10.2f" % (
                    size, peer, t * 1e6, algbw, algbw * 2 * (n - 1) / n, d2d))
        size *= 4
    dist.destroy_process_group()
    hvd.shutdown()


if __name__ == "__main__":
    main()
