"""A trial for test_sweep.py, run by `cohort sweep` as a gang of ranks:
"trains" x for resource() epochs (loss (x - 0.3)^2 + 1/epoch, averaged over
the ranks each epoch), rank 0 keeps the epoch in checkpoint_dir() when the
trial is paused and broadcasts it on start (a PBT replacement starts at
start_step()), and every rank appends what it did to $SWEEP_TEST_RUNS.
params["behave"]: "crash" exits 3, "silent" reports another metric only."""
import json
import os
import sys
import time

import numpy as np

import cohort
from cohort import sweep

cohort.init()
params = sweep.params()
state = os.path.join(sweep.checkpoint_dir(), "state.json")
start = 0
if cohort.rank() == 0 and os.path.exists(state):
    with open(state) as f:
        start = json.load(f)["epoch"]
elif sweep.clone_checkpoint_dir():  # PBT: "loads" the other trial's state, taken at start_step()
    start = sweep.start_step()
start = int(cohort.broadcast(np.array([start], dtype=np.int64), root_rank=0)[0])
with open(os.environ["SWEEP_TEST_RUNS"], "a") as f:
    f.write(json.dumps({"trial": sweep.trial_id(), "rank": cohort.rank(), "start": start,
                        "resource": sweep.resource(), "clone_from": sweep.clone_checkpoint_dir(),
                        "start_step": sweep.start_step()}) + "\n")
behave = params.get("behave", "ok")
if behave == "crash":
    sys.exit(3)
x = float(params["x"])
epoch = start
while epoch < sweep.resource():  # ASHA raises resource() when it promotes this trial at once
    epoch += 1
    time.sleep(float(os.environ.get("SWEEP_TEST_EPOCH_SECONDS", "0")))  # the "training"
    loss = float(cohort.allreduce(np.array([(x - 0.3) ** 2 + 1.0 / epoch]))[0])
    decision = sweep.report({"other": loss} if behave == "silent" else loss, epoch)
    if decision == "pause":
        if cohort.rank() == 0:
            with open(state + ".tmp", "w") as f:
                json.dump({"epoch": epoch}, f)
            os.replace(state + ".tmp", state)
        break
    if decision == "stop":
        break
cohort.shutdown()
