"""Runs Horovod's elastic PyTorch examples (examples/elastic/pytorch:
pytorch_synthetic_benchmark_elastic.py, pytorch_mnist_elastic.py and
pytorch_imagenet_resnet50_elastic.py), only their import changed, as elastic
`cohort run` jobs on this host, and changes the job under them the way a
cluster would:

- synthetic benchmark: starts on 2 slots; after the first benchmark iteration
  the discovery script shows a third slot (the job grows to 3); after the
  third, the worker that started first (rank 0) gets kill -9 (the job goes on
  with 2). Checked: exit 0, the launcher reported both rounds, every
  iteration 0..N-1 was logged, and the result line counts 2 CPUs.
- MNIST: starts on 3 slots over a small generated MNIST (idx files in
  torchvision's raw layout, so nothing is downloaded); at the first logged
  batch of epoch 1, a worker that is not rank 0 gets kill -9. Checked: exit 0,
  the launcher reported the round without it, and the test set's loss and
  accuracy are finite.
- ImageNet ResNet-50: 2 epochs on 3 slots over a tiny generated ImageFolder
  (example_data.make_image_folder; run through example_main.py for its
  SummaryWriter stand-in); once epoch 1's checkpoint is written, a worker
  that is not rank 0 gets kill -9 (tqdm's progress reaches this runner only
  at an epoch's end: `cohort run` forwards whole lines). Checked: exit 0, the
  launcher reported the round without it, both checkpoints were written,
  and epoch 2's train and validation loss and accuracy are logged, finite.

Horovod's scripts are not part of this repository: --examples (or
COHORT_HOROVOD_ELASTIC_EXAMPLES) names the folder holding copies, or
--horovod (or COHORT_HOROVOD_SUITE) a Horovod checkout; without them the
exit status is 77 (ctest reports a skip)."""
import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

from example_data import make_image_folder, make_mnist
from horovod_copy import (ELASTIC_EXAMPLES_IN_CHECKOUT, copy_with_cohort_import,
                          examples_folder)

SYNTHETIC = "pytorch_synthetic_benchmark_elastic.py"
MNIST = "pytorch_mnist_elastic.py"
IMAGENET = "pytorch_imagenet_resnet50_elastic.py"
EXAMPLE_MAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "example_main.py")
SKIP = 77


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", default="", help="the folder holding Horovod's elastic PyTorch "
                   "examples (default: $COHORT_HOROVOD_ELASTIC_EXAMPLES)")
    p.add_argument("--horovod", default="", help="a Horovod checkout, used when no --examples "
                   "or $COHORT_HOROVOD_ELASTIC_EXAMPLES is given (default: $COHORT_HOROVOD_SUITE)")
    p.add_argument("--cohort", required=True, help="the cohort executable")
    p.add_argument("--stage", required=True, help="a scratch directory (emptied)")
    p.add_argument("--timeout", type=int, default=240, help="seconds each job may take")
    return p.parse_args()


def fail(message):
    raise SystemExit("run_elastic_examples.py: " + message)


def worker_pids(script):
    """Live worker processes running `script`, oldest first."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
            with open("/proc/%s/stat" % pid) as f:
                started = int(f.read().rsplit(")", 1)[1].split()[19])
        except OSError:
            continue
        # The script right after the interpreter (or after example_main.py):
        # not cohort run's own argv, which holds it further on.
        if argv[0] == sys.executable.encode() and script.encode() in argv[1:3]:
            found.append((started, int(pid)))
    return [pid for _, pid in sorted(found)]


class ElasticJob:
    """`cohort run` of `script` over a discovery script that reads a hosts
    file of this job's (127.0.0.1 with `slots` slots to begin with)."""

    def __init__(self, args, script, slots):
        self.args = args
        self.script = script
        self.hosts = os.path.join(args.stage, "hosts")
        self.set_slots(slots)
        self.lines = []
        self.returncode = None

    def run(self, script_args, on_line, through=()):
        """Runs the job to its end; `on_line` gets each output line (stdout
        and stderr) as it arrives. `through`: what runs the script (e.g.
        example_main.py)."""
        # Unbuffered, so that the runner sees progress lines as they happen.
        env = dict(os.environ, COHORT_TIMEOUT="30", PYTHONUNBUFFERED="1")
        cmd = [self.args.cohort, "run", "--host-discovery-script", "cat " + self.hosts,
               "--min-np", "2", "--max-np", "3", "--elastic-timeout", "60", "--",
               sys.executable] + list(through) + [self.script] + script_args
        print("+ " + " ".join(cmd), flush=True)
        self.proc = subprocess.Popen(cmd, cwd=self.args.stage, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
        deadline = threading.Timer(self.args.timeout, self.stop)
        deadline.start()
        for line in self.proc.stdout:
            print(line, end="", flush=True)
            self.lines.append(line.rstrip("\n"))
            on_line(line)
        self.returncode = self.proc.wait()
        deadline.cancel()

    def set_slots(self, slots):
        with open(self.hosts + ".new", "w") as f:
            f.write("127.0.0.1:%d\n" % slots)
        os.replace(self.hosts + ".new", self.hosts)

    def stop(self):
        print("run_elastic_examples.py: the job ran past --timeout; killing it", flush=True)
        os.killpg(self.proc.pid, signal.SIGKILL)

    def output(self):
        return "\n".join(self.lines)


def kill_worker(script, oldest):
    pids = worker_pids(script)
    if len(pids) < 2:
        fail("expected at least 2 workers of %s, found %s" % (script, pids))
    victim = pids[0] if oldest else pids[-1]
    print("run_elastic_examples.py: kill -9 %d" % victim, flush=True)
    os.kill(victim, signal.SIGKILL)


def run_synthetic(args, script):
    iters = 6
    events = {"grown": False, "killed": False}

    def on_line(line):
        m = re.search(r"Iter #(\d+):", line)
        if not m:
            return
        if not events["grown"]:
            events["grown"] = True
            job.set_slots(3)
        elif int(m.group(1)) >= 2 and len(worker_pids(script)) == 3 and not events["killed"]:
            events["killed"] = True
            kill_worker(script, oldest=True)

    job = ElasticJob(args, script, 2)
    job.run(["--no-cuda", "--model", "mobilenet_v3_small", "--batch-size", "2",
             "--num-warmup-batches", "2", "--num-batches-per-iter", "2",
             "--num-iters", str(iters)], on_line)
    out = job.output()
    if job.returncode != 0:
        fail("synthetic benchmark: cohort run exited %d" % job.returncode)
    if not events["killed"]:
        fail("synthetic benchmark: the job never ran on 3 workers, so nobody was killed")
    if not re.search(r"elastic round \d+ \(.*\): 3 workers", out):
        fail("synthetic benchmark: no round of 3 workers after the third slot appeared")
    if not re.search(r"elastic round \d+ \(worker 0 was killed by signal 9.*\): 2 workers", out):
        fail("synthetic benchmark: no round of 2 workers after worker 0 was killed")
    logged = sorted({int(i) for i in re.findall(r"Iter #(\d+):", out)})
    if logged != list(range(iters)):
        fail("synthetic benchmark: iterations logged %s, expected 0..%d" % (logged, iters - 1))
    if not re.search(r"Total img/sec on 2 CPU\(s\): [0-9.]+ \+-[0-9.]+", out):
        fail("synthetic benchmark: no result line for 2 CPUs")
    print("synthetic benchmark: grew 2 -> 3, lost rank 0, finished on 2 workers")


def run_mnist(args, script):
    data = os.path.join(args.stage, "mnist")
    make_mnist(data, train=480, test=120)
    events = {"killed": False}

    def on_line(line):
        m = re.search(r"Train Epoch: 1 \[(\d+)/", line)
        if m and int(m.group(1)) >= 32 and not events["killed"]:  # mid-epoch
            events["killed"] = True
            kill_worker(script, oldest=False)

    job = ElasticJob(args, script, 3)
    job.run(["--no-cuda", "--epochs", "2", "--batch-size", "16", "--test-batch-size", "40",
             "--log-interval", "2", "--data-dir", data], on_line)
    out = job.output()
    if job.returncode != 0:
        fail("MNIST: cohort run exited %d" % job.returncode)
    if not re.search(r"elastic round \d+ \(worker \d was killed by signal 9.*\): 2 workers", out):
        fail("MNIST: no round of 2 workers after a worker was killed")
    m = re.search(r"Test set: Average loss: (\S+), Accuracy: (\S+)%", out)
    if not m or not all(math.isfinite(float(v)) for v in m.groups()):
        fail("MNIST: no finite test-set loss and accuracy")
    if "Train Epoch: 2 " not in out:
        fail("MNIST: epoch 2 never ran")
    print("MNIST: lost a worker in epoch 1, finished 2 epochs on 2 workers; test loss %s, "
          "accuracy %s%%" % m.groups())


def run_imagenet(args, script):
    for part, per_class, seed in (("train", 6, 1), ("val", 2, 2)):
        make_image_folder(os.path.join(args.stage, "imagenet", part), 2, per_class, seed)
    logs = os.path.join(args.stage, "imagenet-logs")
    checkpoint = os.path.join(args.stage, "imagenet-checkpoint-{epoch}.pth.tar")
    first = checkpoint.format(epoch=1)
    done = threading.Event()
    killed = []

    def kill_after_the_first_epoch():
        while not done.wait(0.05):
            if os.path.exists(first):
                kill_worker(script, oldest=False)
                killed.append(True)
                return

    watcher = threading.Thread(target=kill_after_the_first_epoch)
    watcher.start()
    job = ElasticJob(args, script, 3)
    try:
        job.run(["--no-cuda", "--epochs", "2", "--batch-size", "2", "--val-batch-size", "2",
                 "--batches-per-commit", "1", "--warmup-epochs", "1",
                 "--train-dir", os.path.join(args.stage, "imagenet", "train"),
                 "--val-dir", os.path.join(args.stage, "imagenet", "val"),
                 "--log-dir", logs, "--checkpoint-format", checkpoint], lambda line: None,
                through=[EXAMPLE_MAIN])
    finally:
        done.set()
        watcher.join()
    out = job.output()
    if job.returncode != 0:
        fail("ImageNet: cohort run exited %d" % job.returncode)
    if not killed:
        fail("ImageNet: no checkpoint of epoch 1 appeared, so nobody was killed")
    if not re.search(r"elastic round \d+ \(worker \d was killed by signal 9.*\): 2 workers",
                     out):
        fail("ImageNet: no round of 2 workers after a worker was killed")
    if not os.path.isfile(checkpoint.format(epoch=2)):
        fail("ImageNet: no checkpoint of epoch 2")
    logged = {}
    with open(os.path.join(logs, "scalars.jsonl")) as f:
        for line in f:
            entry = json.loads(line)
            if entry["step"] == 1:  # epoch 2
                logged[entry["tag"]] = entry["value"]
    tags = ("train/loss", "train/accuracy", "val/loss", "val/accuracy")
    if sorted(logged) != sorted(tags) or not all(math.isfinite(v) for v in logged.values()):
        fail("ImageNet: expected finite %s for epoch 2, logged %s" % (", ".join(tags), logged))
    print("ImageNet ResNet-50: lost a worker after epoch 1, finished epoch 2 on 2 workers; %s" %
          ", ".join("%s %.4f" % (t, logged[t]) for t in tags))


def main():
    args = parse_args()
    args.cohort = os.path.abspath(args.cohort)
    examples = examples_folder(args.examples, "COHORT_HOROVOD_ELASTIC_EXAMPLES",
                               ELASTIC_EXAMPLES_IN_CHECKOUT, args.horovod)
    missing = [s for s in (SYNTHETIC, MNIST, IMAGENET)
               if not os.path.isfile(os.path.join(examples, s))]
    if not examples or missing:
        print("skipped: no copy of Horovod's examples/elastic/pytorch/%s (give --examples, "
              "COHORT_HOROVOD_ELASTIC_EXAMPLES or a checkout in COHORT_HOROVOD_SUITE; got '%s')" %
              (", ".join(missing), examples))
        return SKIP
    shutil.rmtree(args.stage, ignore_errors=True)
    os.makedirs(args.stage)
    staged = {}
    for name in (SYNTHETIC, MNIST, IMAGENET):
        staged[name] = os.path.join(args.stage, name)
        copy_with_cohort_import(os.path.join(examples, name), staged[name])
    started = time.monotonic()
    run_synthetic(args, staged[SYNTHETIC])
    run_mnist(args, staged[MNIST])
    run_imagenet(args, staged[IMAGENET])
    print("elastic examples: all 3 passed in %.0f s" % (time.monotonic() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
