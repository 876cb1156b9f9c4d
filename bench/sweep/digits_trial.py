"""The TPE example's trial, small: softmax regression on sklearn's digits
with cohort.torch on every rank, 200 steps (about half a second), the test
accuracy reported to the sweep (printed outside one). What it imports
(torch, sklearn, cohort.torch) is what a real trial's start pays for."""
import os
import time

import torch
from sklearn.datasets import load_digits

import cohort.torch as hvd
from cohort import sweep

hvd.init()
params = sweep.params() if os.environ.get("COHORT_SWEEP_TRIAL") else {"lr": 0.1}
digits = load_digits()
x = torch.tensor(digits.data, dtype=torch.float32) / 16
y = torch.tensor(digits.target)
model = torch.nn.Linear(64, 10)
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=float(params["lr"])),
                               named_parameters=model.named_parameters())
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
start = time.monotonic()
for _ in range(int(os.environ.get("DIGITS_TRIAL_STEPS", "200"))):  # the "training", ~0.5 s
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x[hvd.rank()::hvd.size()]),
                                      y[hvd.rank()::hvd.size()]).backward()
    opt.step()
accuracy = float((model(x).argmax(1) == y).float().mean())
if os.environ.get("COHORT_SWEEP_TRIAL"):
    sweep.report(accuracy, 1)
elif hvd.rank() == 0:
    print("accuracy %.3f, training %.2f s" % (accuracy, time.monotonic() - start))
hvd.shutdown()
