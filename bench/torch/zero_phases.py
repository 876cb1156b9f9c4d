#!/usr/bin/env python3
"""Where one step of zero_bench.py's model goes, per phase (rank 0, median
over --steps after one warm-up): forward, backward (with the gradient hooks'
work), and inside step(): the wait for the gradient reductions, the local
optimizer step and the parameter allgather (ZeRO modes), or the wait for the
allreduces (dist). Run one mode per job:

    COHORT_BUILD_DIR=build PYTHONPATH=python MALLOC_MMAP_THRESHOLD_=131072 \\
      build/cohort run -np 2 -- /usr/bin/python3 bench/torch/zero_phases.py --mode zero1

--bench names the zero_bench.py whose model and modes to use (default: the
one beside this file; pass another checkout's to profile its code)."""
import argparse
import functools
import os
import statistics
import sys
import time


def timed(obj, name, label, times):
    """Wraps obj.name so that its time adds to times[label]."""
    f = getattr(obj, name)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return f(*args, **kwargs)
        finally:
            times[label] = times.get(label, 0.0) + time.perf_counter() - start
    setattr(obj, name, wrapper)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mode", default="zero1", help="dist, zero1, zero2, zero1v or zero2v")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--bench", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "zero_bench.py"))
    a = p.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(a.bench)))
    import zero_bench
    import torch
    torch.set_num_threads(1)
    args = argparse.Namespace(layers=8, d_model=1024, heads=16, vocab=8192, seq=8, batch=1)
    model, opt, rank, _, _ = zero_bench.setup(a.mode, args)
    times = {}
    if a.mode.startswith("zero"):
        timed(opt, "_finish_reductions", "wait_reduce", times)
        timed(opt.optim, "step", "optim_step", times)
        timed(opt, "_sync_params", "sync_params", times)
    else:
        timed(opt, "synchronize", "wait_reduce", times)
    gen = torch.Generator().manual_seed(rank)
    rows = []
    for step in range(a.steps + 1):
        times.clear()
        idx = torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=gen)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        logits = model(idx[:, :-1])
        t1 = time.perf_counter()
        torch.nn.functional.cross_entropy(logits.reshape(-1, args.vocab),
                                          idx[:, 1:].reshape(-1)).backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        if step > 0:
            rows.append(dict(fwd=t1 - t0, bwd=t2 - t1, step=t3 - t2, total=t3 - t0, **times))
    if rank == 0:
        print("phases %s (load %s): %s" % (
            a.mode, open("/proc/loadavg").read().split()[0],
            " ".join("%s=%.3f" % (k, statistics.median(r[k] for r in rows)) for k in rows[0])),
            flush=True)
    import cohort.torch as hvd
    hvd.shutdown()


if __name__ == "__main__":
    main()
