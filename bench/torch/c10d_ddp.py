#!/usr/bin/env python3
"""DistributedDataParallel training on the "cohort" backend vs gloo, in one
job: ResNet-18 (torchvision) on random images, SGD, one torch thread per
rank. Each repetition times --steps steps on each backend in turn (after one
warm-up step each); images/s per worker is the median over repetitions of
the slowest rank's rate.

    build/cohort run -np 2 -- /usr/bin/python3 bench/torch/c10d_ddp.py \\
        [--model resnet18] [--image-size 64] [--batch 16] [--steps 3] [--reps 3]"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP

import c10d_common


def make(model_name, group):
    torch.manual_seed(0)
    model = DDP(getattr(torchvision.models, model_name)(num_classes=10), process_group=group)
    return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def step(model, opt, x, y):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()


def images_per_sec(model, opt, x, y, steps, timer_group):
    step(model, opt, x, y)  # warm-up
    dist.barrier(group=timer_group)
    start = time.perf_counter()
    for _ in range(steps):
        step(model, opt, x, y)
    rate = torch.tensor([x.shape[0] * steps / (time.perf_counter() - start)], dtype=torch.float64)
    dist.all_reduce(rate, op=dist.ReduceOp.MIN, group=timer_group)  # the slowest rank
    return rate.item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    gloo = c10d_common.start()
    gen = torch.Generator().manual_seed(dist.get_rank())
    x = torch.randn(args.batch, 3, args.image_size, args.image_size, generator=gen)
    y = torch.randint(0, 10, (args.batch,), generator=gen)
    runs = {"cohort": make(args.model, None), "gloo": make(args.model, gloo)}
    rates = {name: [] for name in runs}
    for _ in range(args.reps):
        for name, (model, opt) in runs.items():
            rates[name].append(images_per_sec(model, opt, x, y, args.steps, gloo))
    if dist.get_rank() == 0:
        print("# DDP %s %dx%d batch %d per worker, %d workers, 1 thread each; img/s per worker "
              "(slowest rank), per repetition:" % (args.model, args.image_size, args.image_size,
                                                   args.batch, dist.get_world_size()))
        for name in runs:
            print("#   %-6s %s" % (name, " ".join("%.1f" % r for r in rates[name])))
        c, g = statistics.median(rates["cohort"]), statistics.median(rates["gloo"])
        print("ddp_cohort_img_sec %.1f\nddp_gloo_img_sec %.1f\nratio_cohort_over_gloo %.3f"
              % (c, g, c / g), flush=True)
    c10d_common.finish()


if __name__ == "__main__":
    main()
