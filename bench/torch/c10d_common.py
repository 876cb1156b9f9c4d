"""Shared by the c10d benchmarks: the job's two process groups, the default
one on "cohort" and a gloo group over the same ranks, and the end of the job."""
import datetime
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import cohort  # noqa: E402
import cohort.torch.distributed  # noqa: E402,F401


def start():
    """One torch thread per rank; returns the gloo group (the default group is cohort's)."""
    torch.set_num_threads(1)
    dist.init_process_group("cohort", timeout=datetime.timedelta(seconds=600))
    return dist.new_group(backend="gloo")


def finish():
    dist.destroy_process_group()
    cohort.shutdown()
