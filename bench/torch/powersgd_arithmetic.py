"""powersgd_arithmetic.py: what PowerSGD's own arithmetic costs per step on a
model's gradients, with no communication, in one process: cohort's
Compression.powersgd with its float32 kernels (cohort.h, PowerSgdProject),
the same reducer on torch's operators (what it runs for other dtypes and GPU
tensors), and torch's DDP powerSGD_hook (the backward of a 1-rank gloo DDP
with the hook minus the same backward without it; all gradients in one
bucket, as the multi-host benchmark runs it).

Each figure is the median of --reps steps after two warm-up steps, on
--threads torch threads (1 by default, as bench/torch/synthetic_training.py;
cohort's kernels use one thread per call whatever the setting). The three run interleaved,
--rounds times, and the medians over rounds are printed.

Usage: PYTHONPATH=python COHORT_BUILD_DIR=build /usr/bin/python3 \\
         bench/torch/powersgd_arithmetic.py [--model resnet50] [--ranks 1,2,4]
         [--reps 7] [--rounds 3] [--image-size 32] [--batch-size 32] [--threads 1]"""
import argparse
import os
import statistics
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
import torchvision.models as models
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook

import cohort.torch.powersgd as powersgd
from cohort.torch.optimizer import _REDUCER_BUCKET_BYTES, _buckets
from cohort.torch.reducer_comm import Pending


class NoComm:
    """A one-rank comm: every average is the tensor itself, at once."""
    size = 1

    def allreduce_mean_async(self, tensor, name):
        return Pending(lambda: True, lambda: tensor)

    def allreduce_mean_into(self, tensors, name):
        return Pending(lambda: True, lambda: None)


def median_ms(fn, reps):
    times = []
    for _ in range(reps + 2):
        times.append(fn())
    return 1e3 * statistics.median(times[2:])


def reducer_step(model, grads, rank, kernels):
    """Seconds of one step of cohort's reducer over `model`'s gradients, in
    the DistributedOptimizer's groups."""
    named = dict(model.named_parameters())
    names = {p: n for n, p in named.items()}
    groups = _buckets(list(model.parameters()), _REDUCER_BUCKET_BYTES)
    reducer = powersgd.PowerSGD(rank=rank, start_iter=0)
    fits = powersgd._kernels_fit

    def step():
        for n, p in named.items():
            p.grad.copy_(grads[n])
        if not kernels:
            powersgd._kernels_fit = lambda *tensors: False
        start = time.perf_counter()
        try:
            for i, g in enumerate(groups):
                reducer.reduce([names[p] for p in g], [p.grad for p in g], NoComm(),
                               end_of_step=i == len(groups) - 1)
        finally:
            powersgd._kernels_fit = fits
        return time.perf_counter() - start
    return step


def ddp_backward(model, data, target):
    def step():
        loss = F.cross_entropy(model(data), target)
        start = time.perf_counter()
        loss.backward()
        return time.perf_counter() - start
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--image-size", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
    target = torch.randint(0, 1000, (args.batch_size,))
    model = getattr(models, args.model)()
    F.cross_entropy(model(data), target).backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}

    dist.init_process_group("gloo", store=dist.FileStore(tempfile.mktemp(), 1), rank=0,
                            world_size=1)
    plain = torch.nn.parallel.DistributedDataParallel(getattr(models, args.model)(),
                                                      bucket_cap_mb=4096)
    print("%s, %d x %dx%d images, %d torch thread(s); ms per step, no communication"
          % (args.model, args.batch_size, args.image_size, args.image_size, args.threads),
          flush=True)
    print("%-5s %14s %14s %16s %9s %9s" % ("rank", "cohort kernels", "cohort torch-ops",
                                          "DDP hook", "hook/krn", "ops/krn"))
    for rank in [int(r) for r in args.ranks.split(",")]:
        hooked = torch.nn.parallel.DistributedDataParallel(getattr(models, args.model)(),
                                                           bucket_cap_mb=4096)
        state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=rank,
                                            start_powerSGD_iter=2, min_compression_rate=2)
        hooked.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
        for _ in range(3):  # past start_powerSGD_iter
            ddp_backward(hooked, data, target)()
        rows = {"kernels": [], "ops": [], "hook": []}
        for r in range(args.rounds):
            rows["kernels"].append(median_ms(reducer_step(model, grads, rank, True), args.reps))
            rows["ops"].append(median_ms(reducer_step(model, grads, rank, False), args.reps))
            rows["hook"].append(median_ms(ddp_backward(hooked, data, target), args.reps)
                                - median_ms(ddp_backward(plain, data, target), args.reps))
            print("  [rank %d round %d/%d] kernels %.1f, torch ops %.1f, hook %.1f"
                  % (rank, r + 1, args.rounds, rows["kernels"][-1], rows["ops"][-1],
                     rows["hook"][-1]), flush=True)
        k, o, h = (statistics.median(rows[x]) for x in ("kernels", "ops", "hook"))
        print("%-5d %14.1f %14.1f %16.1f %8.2fx %8.2fx" % (rank, k, o, h, h / k, o / k),
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    main()
