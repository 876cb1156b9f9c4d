"""How long the host waits for the GPU to finish a tiny piece of work, with
the GPU to one process or shared by several (run it under `cohort run -np N`;
the ranks do not talk to each other). It explains the small-message floor of
the IPC and staged allreduce when ranks share one GPU: without MPS, the
processes' CUDA contexts take turns on the GPU (time slices), so each one's
work waits for the others' slices.

    cohort run -np 2 -- python3 bench/gpu/sync_latency.py [--iters 500]

Each rank prints medians (us) of: a 4 KiB device-to-device copy followed by
torch.cuda.synchronize(); an event recorded after the copy and polled with
query() until done; torch.cuda.synchronize() alone."""
import argparse
import os
import statistics
import time

import torch


def median_us(fn, iters):
    for _ in range(20):
        fn()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=500)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("# no CUDA device: nothing to measure")
        return
    rank = int(os.environ.get("COHORT_RANK", "0"))
    size = int(os.environ.get("COHORT_SIZE", "1"))
    x = torch.ones(1024, device="cuda")
    y = torch.empty_like(x)
    event = torch.cuda.Event()

    def copy_sync():
        y.copy_(x)
        torch.cuda.synchronize()

    def copy_poll():
        y.copy_(x)
        event.record()
        while not event.query():
            pass

    results = (median_us(copy_sync, args.iters), median_us(copy_poll, args.iters),
               median_us(torch.cuda.synchronize, args.iters))
    print("rank %d of %d sharing %s: 4 KiB copy+synchronize %.1f us, copy+event poll %.1f us, "
          "synchronize alone %.1f us" % ((rank, size, torch.cuda.get_device_name()) + results),
          flush=True)


if __name__ == "__main__":
    main()
