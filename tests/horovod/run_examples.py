"""Runs Horovod's examples/pytorch/pytorch_mnist.py and
pytorch_synthetic_benchmark.py, only their imports changed, as `cohort run`
jobs of 2 ranks on this host:

- MNIST: one epoch over a small generated MNIST in torchvision's raw layout
  (example_data.make_mnist), so `datasets.MNIST(..., download=True)` finds
  it and downloads nothing. Checked: exit 0, every batch of the epoch
  logged, a finite test-set loss and an accuracy within 0..100%.
- synthetic benchmark: ResNet-18 on random data, with --fp16-allreduce.
  Checked: exit 0, every iteration logged, the result line for 2 CPUs.

pytorch_imagenet_resnet50.py has its own runner (run_imagenet_example.py);
pytorch_lightning_mnist.py is not run (docs/python.md says why).

Horovod's scripts are not part of this repository: --examples (or
COHORT_HOROVOD_EXAMPLES) names the folder holding copies, or --horovod (or
COHORT_HOROVOD_SUITE) a Horovod checkout; without them the exit status is 77
(ctest reports a skip)."""
import argparse
import math
import os
import re
import shutil
import subprocess
import sys

from example_data import make_mnist
from horovod_copy import EXAMPLES_IN_CHECKOUT, copy_with_cohort_import, examples_folder

MNIST = "pytorch_mnist.py"
SYNTHETIC = "pytorch_synthetic_benchmark.py"
SKIP = 77


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", default="", help="the folder holding Horovod's PyTorch "
                   "examples (default: $COHORT_HOROVOD_EXAMPLES)")
    p.add_argument("--horovod", default="", help="a Horovod checkout, used when no --examples "
                   "or $COHORT_HOROVOD_EXAMPLES is given (default: $COHORT_HOROVOD_SUITE)")
    p.add_argument("--cohort", required=True, help="the cohort executable")
    p.add_argument("--stage", required=True, help="a scratch directory (emptied)")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--timeout", type=int, default=180, help="cohort run --timeout, each run")
    return p.parse_args()


def fail(message):
    raise SystemExit("run_examples.py: " + message)


def run(args, script, script_args):
    """Output of one `cohort run` of `script`; fails unless it exits 0. HOME
    is the stage: the MNIST example takes a lock file in it."""
    cmd = [args.cohort, "run", "-np", str(args.np), "--timeout", str(args.timeout), "--",
           sys.executable, script] + script_args
    print("+ " + " ".join(cmd), flush=True)
    env = dict(os.environ, HOME=args.stage)
    done = subprocess.run(cmd, cwd=args.stage, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    print(done.stdout, end="", flush=True)
    if done.returncode != 0:
        fail("%s exited %d" % (os.path.basename(script), done.returncode))
    return done.stdout


def run_mnist(args, script):
    data = os.path.join(args.stage, "mnist")
    train, batch = 128, 16
    make_mnist(data, train=train, test=64)
    out = run(args, script, ["--no-cuda", "--epochs", "1", "--batch-size", str(batch),
                             "--test-batch-size", "32", "--log-interval", "1",
                             "--data-dir", data])
    batches = train // args.np // batch
    logged = sorted({int(i) for i in re.findall(r"Train Epoch: 1 \[(\d+)/", out)})
    if logged != [b * batch for b in range(batches)]:
        fail("MNIST: batches logged at samples %s, expected %d batches of %d" %
             (logged, batches, batch))
    m = re.search(r"Test set: Average loss: (\S+), Accuracy: (\S+)%", out)
    if not m or not math.isfinite(float(m.group(1))) or not 0 <= float(m.group(2)) <= 100:
        fail("MNIST: no finite test-set loss and accuracy in 0..100%")
    print("MNIST: one epoch on %d ranks; test loss %s, accuracy %s%%" % ((args.np,) + m.groups()))


def run_synthetic(args, script):
    iters = 2
    out = run(args, script, ["--no-cuda", "--model", "resnet18", "--batch-size", "4",
                             "--num-warmup-batches", "1", "--num-batches-per-iter", "1",
                             "--num-iters", str(iters), "--fp16-allreduce"])
    logged = sorted({int(i) for i in re.findall(r"Iter #(\d+):", out)})
    if logged != list(range(iters)):
        fail("synthetic benchmark: iterations logged %s, expected 0..%d" % (logged, iters - 1))
    if not re.search(r"Total img/sec on %d CPU\(s\): [0-9.]+ \+-[0-9.]+" % args.np, out):
        fail("synthetic benchmark: no result line for %d CPUs" % args.np)
    print("synthetic benchmark: %d iterations on %d ranks" % (iters, args.np))


def main():
    args = parse_args()
    args.cohort = os.path.abspath(args.cohort)
    examples = examples_folder(args.examples, "COHORT_HOROVOD_EXAMPLES", EXAMPLES_IN_CHECKOUT,
                               args.horovod)
    missing = [s for s in (MNIST, SYNTHETIC) if not os.path.isfile(os.path.join(examples, s))]
    if not examples or missing:
        print("skipped: no copy of Horovod's examples/pytorch/%s (give --examples, "
              "COHORT_HOROVOD_EXAMPLES or a checkout in COHORT_HOROVOD_SUITE; got '%s')" %
              (", ".join(missing), examples))
        return SKIP
    args.stage = os.path.abspath(args.stage)
    shutil.rmtree(args.stage, ignore_errors=True)
    os.makedirs(args.stage)
    staged = {}
    for name in (MNIST, SYNTHETIC):
        staged[name] = os.path.join(args.stage, name)
        copy_with_cohort_import(os.path.join(examples, name), staged[name])
    run_mnist(args, staged[MNIST])
    run_synthetic(args, staged[SYNTHETIC])
    print("examples, %d ranks: MNIST and the synthetic benchmark passed" % args.np)
    return 0


if __name__ == "__main__":
    sys.exit(main())
