#!/usr/bin/env python3
"""Peak activation memory of 1F1B vs GPipe (and 1F1B with recomputation),
measured on examples/gpt_parallel.py's GPT split into p stages: the bytes
of the tensors autograd saved for backward plus the stage inputs kept,
each storage counted once, parameters not (Pipeline(measure_activations=
True)); the peak over the step on each rank, the first stage's reported
(it holds the most micro-batches). Also the peak number of micro-batches in
flight. 1F1B should hold at most p of GPipe's m.

    build/cohort run -np 2 -- /usr/bin/python3 bench/parallel/activations.py \\
        [--micro-batches 4,8,16,32]

Prints one markdown table (the first stage's rank 0)."""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import torch  # noqa: E402

import cohort.torch as hvd  # noqa: E402
from cohort.torch import parallel  # noqa: E402
import gpt_parallel  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--micro-batches", default="4,8,16,32")
    parser.add_argument("--rows", type=int, default=2, help="sequences per micro-batch")
    args, rest = parser.parse_known_args()
    model_args = gpt_parallel.parse_args(["--width", "128", "--layers", "8", "--heads", "8",
                                          "--seq-len", "64", "--vocab", "256"] + rest)
    hvd.init()
    torch.set_num_threads(1)
    mesh = parallel.Mesh(pp=hvd.size())
    p = mesh.pp.size
    parts = gpt_parallel.Parts(model_args, mesh)

    def loss_fn(logits, targets):
        return parallel.vocab_parallel_cross_entropy(logits, targets.t(), mesh.tp).mean()

    stream = gpt_parallel.corpus(model_args)
    if hvd.rank() == 0:
        print("GPT width 128, 8 blocks, sequence 64, %d sequences per micro-batch, p=%d; "
              "first stage (rank 0)\n" % (args.rows, p))
        print("| m | GPipe peak (KiB) | 1F1B peak (KiB) | 1F1B / GPipe | p/m | 1F1B+recompute "
              "(KiB) | in flight GPipe / 1F1B |")
        print("|---|---|---|---|---|---|---|")
    for m in (int(n) for n in args.micro_batches.split(",")):
        model_args.batch_size = m * args.rows
        x, y = gpt_parallel.batch(stream, model_args, 0)
        got = {}
        for schedule, recompute in (("gpipe", False), ("1f1b", False), ("1f1b", True)):
            pipe = parallel.Pipeline(gpt_parallel.layer_builders(model_args, parts), mesh,
                                     loss_fn, micro_batches=m, schedule=schedule,
                                     tied=gpt_parallel.TIED(model_args), recompute=recompute,
                                     measure_activations=True)
            pipe.train_step(x, y)
            got[(schedule, recompute)] = (pipe.stats["peak_activation_bytes"],
                                          pipe.stats["peak_in_flight"])
        if hvd.rank() == 0:
            g, o, r = got[("gpipe", False)], got[("1f1b", False)], got[("1f1b", True)]
            print("| %d | %.0f | %.0f | %.3f | %.3f | %.0f | %d / %d |" % (
                m, g[0] / 1024, o[0] / 1024, o[0] / g[0], p / m, r[0] / 1024, g[1], o[1]),
                flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
