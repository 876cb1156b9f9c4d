"""An elastic training job for test_elastic.py and the elastic figures in
docs/performance.md: a linear model trained with cohort.torch.elastic over a
cohort.data loader, committing after every step. Every committed step adds
the sample ids all ranks trained on (padding excluded) to the state, so rank
0's final record says which samples the job's surviving history saw.

    cohort run --host-discovery-script S --min-np 2 -- python3 elastic_train.py DATA OUT
        [--epochs E] [--batch B] [--kill RANK:STEP[:SIGNAL]] [--grow STEP:HOSTFILE:TEXT]

--kill: in the first round, RANK sends itself SIGNAL (default KILL; STOP
hangs it) at STEP, in the middle of the step (after backward, before the
gradients' allreduce).
--grow: in the first round, rank 0 writes TEXT (commas: new lines) to
HOSTFILE (the discovery script's source) at STEP, waits (deadline 60 s) until
the launcher has published the new round, and commits: the job grows (or
shrinks, with fewer slots) at that step.
OUT gets {"seen": {epoch: [ids]}, "sizes": [size per step], "events": ...}."""
import argparse
import json
import os
import signal
import time

import torch

import cohort.elastic
import cohort.torch as hvd
from cohort.data import DataLoader

parser = argparse.ArgumentParser()
parser.add_argument("data")
parser.add_argument("out")
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--batch", type=int, default=4)
parser.add_argument("--kill", default="")
parser.add_argument("--grow", default="")
args = parser.parse_args()

hvd.init()
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                     named_parameters=model.named_parameters())
loader = DataLoader(args.data, args.batch, seed=7)
state = hvd.elastic.TorchState(model, optimizer, loader=loader, step=0, seen={}, sizes=[])
first_round = cohort.elastic.rounds()[0]
resumed = []  # this process's time of the first step completed after each reset


def note_reset():
    resumed.append(None)


state.register_reset_callbacks([note_reset])


def kill_now():
    if not args.kill or cohort.elastic.rounds()[0] != first_round:
        return
    rank, step, sig = (args.kill + ":KILL").split(":")[:3]
    if hvd.rank() == int(rank) and state.step == int(step):
        with open(args.out + ".killed", "w") as f:
            f.write(repr(time.time()))
        os.kill(os.getpid(), getattr(signal, "SIG" + sig))


def grow_now():
    if not args.grow or hvd.rank() != 0 or cohort.elastic.rounds()[0] != first_round:
        return
    step, hostfile, text = args.grow.split(":", 2)
    if state.step != int(step):
        return
    with open(hostfile, "w") as f:
        f.write(text.replace(",", "\n") + "\n")
    with open(args.out + ".grown", "w") as f:
        f.write(repr(time.time()))
    deadline = time.time() + 60
    while time.time() < deadline:
        joined, newest = cohort.elastic.rounds()
        if newest > joined:
            return
        time.sleep(0.05)
    raise TimeoutError("the launcher published no new round within 60 s")


@hvd.elastic.run
def train(state):
    while True:
        batch = next(state.loader, None)
        if batch is None or state.loader.epoch >= args.epochs:
            if state.loader.state_dict()["epoch"] >= args.epochs:
                break
            continue
        epoch = state.loader.epoch
        used = args.batch - state.loader.padded
        ids = torch.from_numpy(state.loader.indices[:used].astype("int64"))
        x = torch.from_numpy(batch["x"][:used])
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        kill_now()
        optimizer.step()
        everyone = hvd.allgather(ids, name="ids").tolist()
        state.seen.setdefault(epoch, []).extend(everyone)
        state.sizes.append(hvd.size())
        if resumed and resumed[-1] is None:
            resumed[-1] = time.time()
        state.step += 1
        grow_now()
        state.commit()


train(state)
if hvd.rank() == 0:
    with open(args.out, "w") as f:
        json.dump({"seen": state.seen, "sizes": state.sizes, "resumed": resumed,
                   "size": hvd.size()}, f)
hvd.shutdown()
