"""Padding in cohort.data.DataLoader: masking the rows that repeat samples.

Without drop_last, the last step of an epoch is filled up with samples from
the start of the epoch's order so every rank runs the same number of steps
(collectives stay matched). `loader.padded` counts those rows; they are the
last ones of the batch, and with R ranks a rank can get a batch that is
padding only (padded == batch size). Mask them out of the loss and metrics:

    loss = per_sample_loss(model(x), y)[: len(y) - loader.padded].sum() / real_rows

This example writes 8 samples and reads one epoch as 3 ranks of batch size
4: one step of 12 positions, so rank 2's batch is padding only; every real
sample is counted exactly once.

    /usr/bin/python3 examples/loader_padding.py /tmp/padding-demo
"""
import sys

import numpy as np

from cohort.data import DataLoader, Writer


def main(location):
    writer = Writer.create(location, [("x", "array", "float32"), ("label", "label")])
    for i in range(8):
        writer.append({"x": np.full(2, i, np.float32), "label": i})
    writer.commit("8 samples")

    counted = {}
    for rank in range(3):  # the three ranks of a job, one after the other here
        loader = DataLoader(location, batch_size=4, rank=rank, world_size=3, seed=0)
        for step, batch in enumerate(loader):
            real = len(batch["label"]) - loader.padded
            mask = np.arange(len(batch["label"])) < real  # True for rows that count
            print(f"rank {rank}: batch {step} has {loader.padded} of {len(mask)} rows padding")
            for label in batch["label"][mask]:  # e.g. loss[mask].sum() / mask.sum()
                counted[int(label)] = counted.get(int(label), 0) + 1
    once = sum(1 for times in counted.values() if times == 1)
    print(f"samples counted once each: {once} of 8")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/cohort-padding-demo")
