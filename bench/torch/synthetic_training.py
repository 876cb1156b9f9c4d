#!/usr/bin/env python3
"""One worker of the torch training benchmark: a torchvision model trained on
random images, gradients averaged either by cohort's DistributedOptimizer
(--backend cohort, start under `cohort run`) or by
torch.nn.parallel.DistributedDataParallel on gloo (--backend ddp, started by
compare_ddp.py with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT), or not at all
(--backend none: one worker alone, the baseline of scaling efficiency). Same model,
data, optimizer and timing in both; rank 0 prints `result: {...}` with the
median images/s per worker over the timed iterations, and the median time of
each phase of a step: forward, backward (DDP's allreduces finish inside it),
wait (cohort's synchronize() after backward) and update (optimizer step), and
the bytes rank 0's network namespace sent per timed step (host_tx_bytes)."""
import argparse
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F
from torchvision import models


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", choices=["cohort", "ddp", "none"], required=True)
    p.add_argument("--model", default="resnet18")
    p.add_argument("--batch-size", type=int, default=16, help="images per worker per step")
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--warmup-steps", type=int, default=3)
    p.add_argument("--steps-per-iter", type=int, default=5)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--compression", default="none",
                   help="gradients on the wire: none; fp16 (cohort's Compression.fp16, DDP's "
                        "fp16_compress_hook: both halve the bytes sent); powersgdR (cohort's "
                        "Compression.powersgd(rank=R), DDP's powerSGD_hook at rank R, both from "
                        "step 2 of the warm-up on, min_compression_rate 2); topkP (cohort's "
                        "Compression.topk(P/100), e.g. topk1; cohort only); cohort's "
                        "powersgdR and topkP take a scope after @ (auto, host, leader, rank: "
                        "Compression.powersgd(scope=...)) and +sync (overlap=False)")
    p.add_argument("--ddp-buckets", choices=["auto", "one", "default"], default="auto",
                   help="DDP's gradient buckets: one (all gradients in one), default (25 MB "
                        "each), auto (one with powersgdR: torch 1.13's powerSGD_hook on gloo "
                        "aborts with several buckets; default otherwise)")
    p.add_argument("--compression-start", type=int, default=2,
                   help="the step from which PowerSGD compresses (cohort's start_iter, DDP's "
                        "start_powerSGD_iter, which must be > 1)")
    return p.parse_args()


def host_tx_bytes():
    """Bytes sent so far through this network namespace's interfaces other
    than loopback (/proc/net/dev is per namespace): under tools/cluster, what
    this emulated host, all its workers together, put on its link."""
    total = 0
    with open("/proc/net/dev") as f:
        for line in f.readlines()[2:]:
            name, data = line.split(":", 1)
            if name.strip() != "lo":
                total += int(data.split()[8])
    return total


def setup(args, model):
    """(optimizer, rank, world size, module to call, finish) for the backend."""
    if args.backend == "none":
        return torch.optim.SGD(model.parameters(), lr=0.01), 0, 1, model, lambda: None
    if args.backend == "cohort":
        import cohort.torch as hvd
        hvd.init()
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        name, sync = (args.compression[:-5], True) if args.compression.endswith("+sync") else (
            args.compression, False)
        name, _, scope = name.partition("@")
        options = {"scope": scope or "auto", "overlap": not sync}
        compression = {"none": hvd.Compression.none, "fp16": hvd.Compression.fp16}.get(name)
        if name.startswith("powersgd"):
            compression = hvd.Compression.powersgd(rank=int(name[8:]),
                                                   start_iter=args.compression_start, **options)
        elif name.startswith("topk"):
            compression = hvd.Compression.topk(float(name[4:]) / 100, **options)
        elif compression is None or scope or sync:
            raise SystemExit("unknown --compression %r" % args.compression)
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                       named_parameters=model.named_parameters(),
                                       compression=compression)
        return opt, hvd.rank(), hvd.size(), model, hvd.shutdown
    import torch.distributed as dist
    dist.init_process_group("gloo")
    # torch 1.13's powerSGD_hook on gloo issues each bucket's collectives from
    # future callbacks, so with several buckets ranks can issue them in
    # different orders and gloo aborts ("op.preamble.length <= op.nbytes");
    # one bucket keeps one chain per step.
    one = args.ddp_buckets == "one" or (args.ddp_buckets == "auto" and
                                         args.compression.startswith("powersgd"))
    bucket_mb = 4096 if one else 25
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_mb)
    if args.compression == "fp16":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif args.compression.startswith("powersgd"):
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd
        state = powersgd.PowerSGDState(process_group=None,
                                       matrix_approximation_rank=int(args.compression[8:]),
                                       start_powerSGD_iter=args.compression_start,
                                       min_compression_rate=2)
        ddp.register_comm_hook(state, powersgd.powerSGD_hook)
    elif args.compression != "none":
        raise SystemExit("--compression %s: not for DDP" % args.compression)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    return opt, dist.get_rank(), dist.get_world_size(), ddp, dist.destroy_process_group


def main():
    args = parse()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = getattr(models, args.model)()
    opt, rank, size, module, finish = setup(args, model)
    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
    target = torch.randint(0, 1000, (args.batch_size,))

    phases = {"forward": [], "backward": [], "wait": [], "update": []}

    loss_value = [0.0]

    def step():
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = F.cross_entropy(module(data), target)
        loss_value[0] = loss.item()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        if args.backend == "cohort":
            opt.synchronize()  # what opt.step() would do first, timed on its own
            t3 = time.perf_counter()
            with opt.skip_synchronize():
                opt.step()
        else:
            t3 = time.perf_counter()
            opt.step()
        t4 = time.perf_counter()
        return t1 - t0, t2 - t1, t3 - t2, t4 - t3

    for _ in range(args.warmup_steps):
        step()
    sent_before = host_tx_bytes()
    rates = []
    for _ in range(args.iters):
        start = time.perf_counter()
        for _ in range(args.steps_per_iter):
            for name, seconds in zip(phases, step()):
                phases[name].append(seconds)
        rates.append(args.batch_size * args.steps_per_iter / (time.perf_counter() - start))
    sent = host_tx_bytes() - sent_before
    if rank == 0:
        print("result: " + json.dumps({
            "backend": args.backend, "workers": size, "model": args.model,
            "compression": args.compression, "final_loss": round(loss_value[0], 4),
            "img_sec_per_worker": round(statistics.median(rates), 2),
            "phases_ms": {k: round(1e3 * statistics.median(v), 1) for k, v in phases.items()},
            "host_tx_bytes_per_step": round(sent / (args.iters * args.steps_per_iter)),
            "pid": os.getpid()}), flush=True)
    finish()


if __name__ == "__main__":
    main()
