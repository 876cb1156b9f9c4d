#!/usr/bin/env python3
"""Distributed training of a small CNN on scikit-learn's bundled digits data
(8x8 images of 0-9; no download), written as a Horovod script with the one
changed import. Run it on 2 workers:

    build/cohort run -np 2 -- /usr/bin/python3 examples/pytorch_digits.py

Each optimizer step uses one global batch of --batch-size images split evenly
over the workers, so N workers follow the same trajectory as one worker with
the same global batch. Prints the loss and accuracy per epoch and a final
`result: {...}` JSON line; exits with status 1 below --min-accuracy.

With --checkpoint-dir DIR (a directory or s3://...) rank 0 saves a checkpoint
after every epoch, every rank resumes from the last one at start, and SIGTERM
stops the job after the current epoch's checkpoint (exit status 143), as the
queue's preemption does.

Rank 0 records the run (config, per-step train_loss, per-epoch loss and test
accuracy, provenance) with cohort.track in COHORT_TRACKING_URI (default the
embedded sqlite:~/.cohort/tracking.db; --no-track skips it) and prints the
command that serves its dashboard."""
import argparse
import json
import os
import signal
import time

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import cohort.torch as hvd
import cohort.track

MOMENTUM = 0.9  # SGD's, or top-k's momentum correction's (compression())


class DigitsCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = torch.nn.Linear(32 * 4 * 4, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def load(seed):
    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(digits.target, dtype=torch.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=seed,
                                                        stratify=y)
    return x_train, y_train, x_test, y_test


def evaluate(model, x, y):
    """Accuracy over the whole set, each worker scoring its share."""
    model.eval()
    with torch.no_grad():
        mine = slice(hvd.rank(), None, hvd.size())
        correct = (model(x[mine]).argmax(1) == y[mine]).sum().to(torch.int64)
    model.train()
    return hvd.allreduce(correct, op=hvd.Sum, name="eval.correct").item() / len(y)


def start_tracking(args):
    """Records this run (rank 0 only) unless --no-track; returns it and the
    store's URI. A store that cannot be opened (another process holds it) is
    reported and the job goes on unrecorded."""
    uri = os.environ.get("COHORT_TRACKING_URI", "sqlite:~/.cohort/tracking.db")
    if args.no_track:
        return cohort.track.Run(None), uri
    try:
        return cohort.track.init(project="digits", config=vars(args), uri=uri), uri
    except (RuntimeError, ValueError) as e:
        if hvd.rank() == 0:
            print("tracking off: %s" % e, flush=True)
        return cohort.track.Run(None), uri


def compression(text):
    """hvd.Compression for --compression (NAME or NAME@SCOPE)."""
    name, _, scope = text.partition("@")
    if name.startswith("powersgd"):
        return hvd.Compression.powersgd(rank=int(name[len("powersgd"):]), start_iter=10,
                                        scope=scope or "auto")
    if name.startswith("topk"):
        # Deep Gradient Compression's two fixes for SGD with momentum: the
        # momentum applied before sparsifying (the optimizer then has none,
        # see main) and the kept share lowered over the first 30 steps.
        return hvd.Compression.topk(float(name[len("topk"):]) / 100, scope=scope or "auto",
                                    momentum=MOMENTUM, warmup_steps=30)
    if name in ("none", "fp16") and not scope:
        return getattr(hvd.Compression, name)
    raise SystemExit("unknown --compression %r (none, fp16, powersgdR, topkP; the last two "
                     "with @auto, @host or @rank)" % text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=64, help="global batch (all workers)")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    parser.add_argument("--min-accuracy", type=float, default=0.95)
    parser.add_argument("--checkpoint-dir", help="save every epoch there; resume from it")
    parser.add_argument("--compression", default="none",
                        help="gradients on the wire: none, fp16, powersgdR (PowerSGD at rank R "
                             "after 10 steps) or topkP (top-k keeping P%% of each gradient, with "
                             "momentum correction and 30 warm-up steps); "
                             "@rank after the last two compresses on every rank (on one host "
                             "the default, @auto, averages uncompressed), @host once per host")
    parser.add_argument("--no-track", action="store_true",
                        help="do not record the run (default: COHORT_TRACKING_URI, else "
                             "sqlite:~/.cohort/tracking.db)")
    args = parser.parse_args()

    hvd.init()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if args.batch_size % hvd.size() != 0:
        raise SystemExit("--batch-size %d is not divisible by the %d workers" %
                         (args.batch_size, hvd.size()))
    x_train, y_train, x_test, y_test = load(args.seed)

    model = DigitsCNN()
    reducer = compression(args.compression)
    momentum = 0.0 if getattr(reducer, "momentum", 0) else MOMENTUM  # applied once
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=momentum)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=reducer)
    first_epoch, checkpoints, stop = 0, None, []
    if args.checkpoint_dir:
        from cohort.checkpoint import Checkpointer
        checkpoints = Checkpointer(args.checkpoint_dir, keep_last=2)
        state, first_epoch = checkpoints.load()
        if state is None:
            first_epoch = 0
        else:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            if hvd.rank() == 0:
                print("resumed from the checkpoint of epoch %d" % first_epoch, flush=True)
        signal.signal(signal.SIGTERM, lambda signum, frame: stop.append(signum))

    run, store = start_tracking(args)
    start = time.time()
    accuracy = evaluate(model, x_test, y_test) if first_epoch >= args.epochs else None
    step = 0
    for epoch in range(first_epoch, args.epochs):
        order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(epoch))
        total_loss, batches = 0.0, 0
        for first in range(0, len(order) - args.batch_size + 1, args.batch_size):
            batch = order[first:first + args.batch_size]
            mine = batch[hvd.rank()::hvd.size()]  # this worker's share of the global batch
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x_train[mine]), y_train[mine])
            loss.backward()
            optimizer.step()
            step_loss = loss.item()
            total_loss += step_loss
            batches += 1
            run.log({"train_loss": step_loss}, step=step)
            step += 1
        loss = hvd.allreduce(torch.tensor(total_loss / batches), name="epoch.loss").item()
        accuracy = evaluate(model, x_test, y_test)
        run.log({"epoch_loss": loss, "test_accuracy": accuracy}, step=step)
        if hvd.rank() == 0:
            print("epoch %2d  loss %.4f  test accuracy %.4f  (%.1f s)" %
                  (epoch + 1, loss, accuracy, time.time() - start), flush=True)
        if checkpoints is not None:
            if hvd.rank() == 0:
                checkpoints.save({"model": model.state_dict(),
                                  "optimizer": optimizer.state_dict()}, epoch + 1, metric=loss)
            # Every rank stops after the same epoch when any got SIGTERM.
            if hvd.allreduce(torch.tensor(len(stop)), op=hvd.Sum, name="stop").item() > 0:
                if hvd.rank() == 0:
                    print("stopped by SIGTERM after epoch %d" % (epoch + 1), flush=True)
                hvd.shutdown()
                raise SystemExit(128 + signal.SIGTERM)

    result = {"workers": hvd.size(), "global_batch": args.batch_size, "epochs": args.epochs,
              "compression": args.compression,
              "test_accuracy": accuracy, "seconds": round(time.time() - start, 2)}
    run.finish()
    if hvd.rank() == 0:
        print("result: " + json.dumps(result), flush=True)
        if run.id:
            print("tracked as run %s; dashboard: cohort server --store %s  (then open "
                  "http://127.0.0.1:5000)" % (run.id, store), flush=True)
    hvd.shutdown()
    if accuracy < args.min_accuracy:
        raise SystemExit("test accuracy %.4f is below %.2f" % (accuracy, args.min_accuracy))


if __name__ == "__main__":
    main()
