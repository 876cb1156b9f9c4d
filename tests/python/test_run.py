"""cohort.run: a Python function on N workers, results in rank order,
exceptions re-raised here with their rank. Runs outside any job (plain
pytest); each call starts its own `cohort run`."""
import os

import pytest

import cohort

LAUNCH = ["--timeout", "30"]


def test_results_in_rank_order_with_args_and_closures():
    offset = 100

    def work(scale, extra=0):
        import numpy as np
        import cohort
        cohort.init()
        total = cohort.allreduce(np.array([cohort.rank() + 1.0]), op=cohort.Sum)
        out = (cohort.rank(), cohort.size(), float(total[0]) * scale + offset + extra)
        cohort.shutdown()
        return out

    assert cohort.run(work, args=(2,), kwargs={"extra": 1}, np=3, launcher_args=LAUNCH,
                      verbose=False) == [(r, 3, 12.0 + 101) for r in range(3)]


def test_torch_job_returns_tensors():
    def work():
        import torch
        import cohort.torch as hvd
        hvd.init()
        out = hvd.allgather(torch.tensor([hvd.rank()]))
        hvd.shutdown()
        return out

    results = cohort.run(work, np=2, launcher_args=LAUNCH, verbose=False)
    assert [r.tolist() for r in results] == [[0, 1], [0, 1]]


class Custom(Exception):
    pass


def test_worker_exception_reraised_with_rank():
    def work():
        if os.environ["COHORT_RANK"] == "1":
            raise Custom("bad input on this worker")
        return "fine"

    with pytest.raises(Custom, match="bad input on this worker") as info:
        cohort.run(work, np=2, launcher_args=LAUNCH, verbose=False)
    assert info.value.rank == 1
    assert any("rank 1 of 2" in note for note in info.value.__notes__)


def test_dead_worker_fails_the_job_without_hanging():
    def work():
        import numpy as np
        import cohort
        cohort.init()
        if cohort.rank() == 1:
            os._exit(3)  # dies without a word while rank 0 waits in a collective
        cohort.allreduce(np.ones(2))
        return "unreachable"

    with pytest.raises(RuntimeError) as info:
        cohort.run(work, np=2, launcher_args=LAUNCH, verbose=False, timeout=60)
    assert "exit status" in str(info.value) or getattr(info.value, "rank", None) == 0


def test_bad_np():
    with pytest.raises(ValueError, match="np must be at least 1"):
        cohort.run(print, np=0)


def test_horovod_run_keywords():
    """horovod.run's keywords, as Horovod's pytorch_mnist.py --num-proc passes them."""
    def work():
        import cohort
        cohort.init()
        out = cohort.rank()
        cohort.shutdown()
        return out

    with pytest.warns(UserWarning, match="use_gloo/use_mpi are ignored"):
        got = cohort.run(work, num_proc=2, hosts="localhost:2", use_gloo=True, use_mpi=False,
                         launcher_args=LAUNCH, verbose=False)
    assert got == [0, 1]
    with pytest.raises(ValueError, match="cohort.run: give hosts or hostfile, not both"):
        cohort.run(work, np=1, hosts="localhost:1", hostfile="/nonexistent")
    with pytest.raises(ValueError, match=r"cohort.run: np=2 and num_proc=3 disagree"):
        cohort.run(work, np=2, num_proc=3)
