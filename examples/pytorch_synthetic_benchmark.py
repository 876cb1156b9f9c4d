#!/usr/bin/env python3
"""Synthetic training benchmark in the manner of Horovod's
pytorch_synthetic_benchmark.py: a torchvision model trained on random images
with cohort's DistributedOptimizer; reports images/s per worker and in total.

    build/cohort run -np 2 -- /usr/bin/python3 examples/pytorch_synthetic_benchmark.py \\
        --model resnet18 --image-size 64 --batch-size 16

Prints `result: {...}` JSON as its last line (rank 0)."""
import argparse
import json
import timeit

import numpy as np
import torch
import torch.nn.functional as F
from torchvision import models

import cohort.torch as hvd


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="resnet50", help="torchvision model name")
    parser.add_argument("--batch-size", type=int, default=32, help="images per worker per step")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--num-warmup-batches", type=int, default=10)
    parser.add_argument("--num-batches-per-iter", type=int, default=10)
    parser.add_argument("--num-iters", type=int, default=10)
    parser.add_argument("--fp16-allreduce", action="store_true")
    parser.add_argument("--use-adasum", action="store_true",
                        help="combine updates with Adasum instead of averaging gradients")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    args = parser.parse_args()

    hvd.init()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = getattr(models, args.model)()
    # Adasum adapts the combined step itself: no learning-rate scaling by size (as Horovod).
    lr_scaler = 1 if args.use_adasum else hvd.size()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * lr_scaler)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression,
                                         op=hvd.Adasum if args.use_adasum else hvd.Average)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
    target = torch.randint(0, 1000, (args.batch_size,))

    def benchmark_step():
        optimizer.zero_grad()
        F.cross_entropy(model(data), target).backward()
        optimizer.step()

    def log(text):
        if hvd.rank() == 0:
            print(text, flush=True)

    log("Model: %s, batch size %d, image size %d, %d worker(s)" %
        (args.model, args.batch_size, args.image_size, hvd.size()))
    log("Running warmup...")
    timeit.timeit(benchmark_step, number=args.num_warmup_batches)
    log("Running benchmark...")
    img_secs = []
    for i in range(args.num_iters):
        t = timeit.timeit(benchmark_step, number=args.num_batches_per_iter)
        img_sec = args.batch_size * args.num_batches_per_iter / t
        log("Iter #%d: %.1f img/sec per worker" % (i, img_sec))
        img_secs.append(img_sec)
    mean, conf = np.mean(img_secs), 1.96 * np.std(img_secs)
    log("Img/sec per worker: %.1f +-%.1f" % (mean, conf))
    log("Total img/sec on %d worker(s): %.1f +-%.1f" %
        (hvd.size(), hvd.size() * mean, hvd.size() * conf))
    log("result: " + json.dumps({"model": args.model, "workers": hvd.size(),
                                 "img_sec_per_worker": round(float(mean), 2),
                                 "img_sec_total": round(float(hvd.size() * mean), 2)}))
    hvd.shutdown()


if __name__ == "__main__":
    main()
