"""Runs Horovod's examples/pytorch/pytorch_imagenet_resnet50.py, only its
import changed, on 2 ranks over a tiny synthetic ImageFolder made here (a few
PNG images per class): one epoch, then a second run that must resume from the
first run's checkpoint and train one more epoch.

Horovod's script is not part of this repository: --examples (or
COHORT_HOROVOD_EXAMPLES) names the folder holding a copy, or --horovod (or
COHORT_HOROVOD_SUITE) a Horovod checkout; without one the exit status is 77
(ctest reports a skip). Checked: both runs exit 0, write
checkpoint-1 and checkpoint-2 (with 'model' and 'optimizer', the weights
changed by the second epoch), and log finite train/val loss and accuracy for
epoch 0, then for epoch 1 only (the second run resumed)."""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys

from example_data import make_image_folder
from horovod_copy import EXAMPLES_IN_CHECKOUT, copy_with_cohort_import, examples_folder

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = "pytorch_imagenet_resnet50.py"
TAGS = ("train/loss", "train/accuracy", "val/loss", "val/accuracy")
SKIP = 77


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", default="", help="the folder holding Horovod's " + SCRIPT +
                   " (default: $COHORT_HOROVOD_EXAMPLES)")
    p.add_argument("--horovod", default="", help="a Horovod checkout, used when no --examples "
                   "or $COHORT_HOROVOD_EXAMPLES is given (default: $COHORT_HOROVOD_SUITE)")
    p.add_argument("--cohort", required=True, help="the cohort executable")
    p.add_argument("--stage", required=True, help="a scratch directory (emptied)")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--timeout", type=int, default=300, help="cohort run --timeout, each run")
    p.add_argument("--classes", type=int, default=2)
    p.add_argument("--train-per-class", type=int, default=4)
    p.add_argument("--val-per-class", type=int, default=2)
    return p.parse_args()


def run(args, script, epochs, log_dir):
    stage = args.stage
    cmd = [args.cohort, "run", "-np", str(args.np), "--timeout", str(args.timeout), "--",
           sys.executable, os.path.join(HERE, "example_main.py"), script,
           "--train-dir", os.path.join(stage, "train"), "--val-dir", os.path.join(stage, "val"),
           "--log-dir", log_dir, "--epochs", str(epochs), "--warmup-epochs", "1",
           "--batch-size", "2", "--val-batch-size", "2",
           "--checkpoint-format", os.path.join(stage, "checkpoint-{epoch}.pth.tar")]
    print("+ " + " ".join(cmd), flush=True)
    rc = subprocess.call(cmd, cwd=stage)
    if rc != 0:
        raise SystemExit("run_imagenet_example.py: the run of %d epoch(s) exited %d" % (epochs, rc))


def logged(log_dir):
    """epoch -> {tag: value} from the SummaryWriter stand-in's file."""
    out = {}
    with open(os.path.join(log_dir, "scalars.jsonl")) as f:
        for line in f:
            entry = json.loads(line)
            out.setdefault(entry["step"], {})[entry["tag"]] = entry["value"]
    return out


def check_metrics(log_dir, epoch):
    got = logged(log_dir)
    if list(got) != [epoch] or sorted(got[epoch]) != sorted(TAGS):
        raise SystemExit("run_imagenet_example.py: %s: expected %s for epoch %d only, got %s" %
                         (log_dir, ", ".join(TAGS), epoch, got))
    values = got[epoch]
    if not all(math.isfinite(v) for v in values.values()) or not all(
            0.0 <= values[t] <= 1.0 for t in ("train/accuracy", "val/accuracy")):
        raise SystemExit("run_imagenet_example.py: epoch %d: bad metrics %s" % (epoch, values))
    print("epoch %d: %s" % (epoch, ", ".join("%s %.4f" % (t, values[t]) for t in TAGS)))


def check_checkpoints(stage):
    import torch
    first, second = (torch.load(os.path.join(stage, "checkpoint-%d.pth.tar" % e))
                     for e in (1, 2))
    for c in (first, second):
        if sorted(c) != ["model", "optimizer"]:
            raise SystemExit("run_imagenet_example.py: checkpoint keys %s" % sorted(c))
    w = "conv1.weight"
    if torch.equal(first["model"][w], second["model"][w]):
        raise SystemExit("run_imagenet_example.py: the second epoch did not change %s" % w)


def main():
    args = parse_args()
    args.cohort = os.path.abspath(args.cohort)
    examples = examples_folder(args.examples, "COHORT_HOROVOD_EXAMPLES", EXAMPLES_IN_CHECKOUT,
                               args.horovod)
    example = os.path.join(examples, SCRIPT)
    if not examples or not os.path.isfile(example):
        print("skipped: no copy of Horovod's examples/pytorch/%s (give --examples, "
              "COHORT_HOROVOD_EXAMPLES or a checkout in COHORT_HOROVOD_SUITE; got '%s')" %
              (SCRIPT, example))
        return SKIP
    shutil.rmtree(args.stage, ignore_errors=True)
    os.makedirs(args.stage)
    script = os.path.join(args.stage, SCRIPT)
    copy_with_cohort_import(example, script)
    make_image_folder(os.path.join(args.stage, "train"), args.classes, args.train_per_class, 1)
    make_image_folder(os.path.join(args.stage, "val"), args.classes, args.val_per_class, 2)
    for epochs in (1, 2):  # the second run resumes from checkpoint-1
        log_dir = os.path.join(args.stage, "logs%d" % epochs)
        run(args, script, epochs, log_dir)
        check_metrics(log_dir, epochs - 1)
    check_checkpoints(args.stage)
    print("imagenet example, %d ranks: 2 runs passed (one epoch, then a resumed one)" % args.np)
    return 0


if __name__ == "__main__":
    sys.exit(main())
