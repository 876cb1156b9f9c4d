#!/usr/bin/env python3
"""Python per-call cost of the engine path (issue 11 item 17): a ResNet-50
step's 161 gradient tensors through allreduce_async_ + synchronize, against one
flat allreduce of the same bytes, both from Python through cohort.torch.

    cohort run -np 2 -- /usr/bin/python3 bench/engine/python_per_call.py [--steps 30]

Rank 0 prints, as medians over the steps:
  submit_us_per_call   time in allreduce_async_ per tensor (the Python path
                       up to the engine's queue)
  sync_us_per_call     time in synchronize per tensor once all are submitted
  fused_ms / flat_ms   the 161-tensor step and the one flat allreduce
  ratio                fused_ms / flat_ms (issue goal: <= 1.15)
"""
import argparse
import statistics
import time

import torch
import torchvision

import cohort.torch as hvd


def resnet50_gradients():
    """The 161 parameter tensors of torchvision's ResNet-50, backward order."""
    model = torchvision.models.resnet50()
    return [torch.zeros_like(p) for p in reversed(list(model.parameters()))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    hvd.init()
    grads = resnet50_gradients()
    names = ["grad.%d" % i for i in range(len(grads))]
    flat = torch.zeros(sum(g.numel() for g in grads))
    submit, sync, fused, flat_times = [], [], [], []
    for step in range(args.warmup + args.steps):
        hvd.barrier()
        t0 = time.perf_counter()
        handles = [hvd.allreduce_async_(g, name=n, op=hvd.Sum) for g, n in zip(grads, names)]
        t1 = time.perf_counter()
        for h in handles:
            hvd.synchronize(h)
        t2 = time.perf_counter()
        hvd.barrier()
        t3 = time.perf_counter()
        hvd.synchronize(hvd.allreduce_async_(flat, name="flat", op=hvd.Sum))
        t4 = time.perf_counter()
        if step >= args.warmup:
            submit.append((t1 - t0) / len(grads) * 1e6)
            sync.append((t2 - t1) / len(grads) * 1e6)
            fused.append((t2 - t0) * 1e3)
            flat_times.append((t4 - t3) * 1e3)
    if hvd.rank() == 0:
        med = statistics.median
        print("tensors %d  bytes %d  steps %d  ranks %d" %
              (len(grads), flat.numel() * 4, args.steps, hvd.size()))
        print("submit_us_per_call %.1f  sync_us_per_call %.1f  fused_ms %.2f  flat_ms %.2f  "
              "ratio %.3f" % (med(submit), med(sync), med(fused), med(flat_times),
                              med(fused) / med(flat_times)))
    hvd.shutdown()


if __name__ == "__main__":
    main()
