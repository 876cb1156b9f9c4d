"""Process sets through cohort.torch: collectives among a subset of ranks.
Run under `cohort run -np 3`."""
import pytest
import torch

from cohort import _cohort


@pytest.fixture(scope="module")
def even(hvd):
    """The set of even ranks {0, 2}, added on every rank."""
    ps = hvd.add_process_set([0, 2])
    yield ps
    hvd.remove_process_set(ps)
    assert ps.process_set_id is None


def test_membership_and_ids(hvd, even):
    assert even.ranks == [0, 2]
    assert even.size() == 2
    assert even.rank() == {0: 0, 1: -1, 2: 1}[hvd.rank()]
    assert even.included() == (hvd.rank() != 1)
    assert even.process_set_id in _cohort.process_set_ids()
    assert hvd.global_process_set.size() == hvd.size()


def test_collectives_within_the_set(hvd, even):
    if not even.included():
        return
    me = even.rank()
    assert hvd.allreduce(torch.ones(2) * (hvd.rank() + 1), op=hvd.Sum,
                         process_set=even).tolist() == [4.0, 4.0]
    assert hvd.allreduce(torch.ones(2) * hvd.rank(), process_set=even).tolist() == [1.0, 1.0]
    assert hvd.allgather(torch.tensor([hvd.rank()]), process_set=even).tolist() == [0, 2]
    # root_rank is a global rank, as in Horovod.
    assert hvd.broadcast(torch.tensor([hvd.rank()]), root_rank=2,
                         process_set=even).tolist() == [2]
    out, splits = hvd.alltoall(torch.tensor([10 * me, 10 * me + 1]), splits=[1, 1],
                               process_set=even)
    assert out.tolist() == [me, 10 + me] and splits.tolist() == [1, 1]
    assert hvd.reducescatter(torch.ones(2, 1), op=hvd.Sum, process_set=even).tolist() == [[2.0]]
    hvd.barrier(process_set=even)


def test_distributed_optimizer_in_a_set(hvd, even):
    if not even.included():
        return
    w = torch.nn.Parameter(torch.zeros(2))
    opt = hvd.DistributedOptimizer(torch.optim.SGD([w], lr=1.0), named_parameters=[("w", w)],
                                   process_set=even)
    (w * float(hvd.rank())).sum().backward()
    opt.step()
    assert w.detach().tolist() == [-1.0, -1.0]  # mean of gradients 0 and 2


def test_an_empty_list_of_ranks_is_every_rank(hvd):
    # Horovod fills an empty list with all ranks (its test_torch.py relies on
    # it at one rank, where the odd ranks are none).
    every = hvd.add_process_set([])
    try:
        assert every.ranks == [] and every.size() == hvd.size() and every.rank() == hvd.rank()
        out = hvd.allreduce(torch.ones(2), op=hvd.Sum, process_set=every)
        assert out.tolist() == [float(hvd.size())] * 2
    finally:
        hvd.remove_process_set(every)


def test_removed_set_is_refused(hvd):
    ps = hvd.ProcessSet([0, 1])
    with pytest.raises(ValueError, match="has not been added"):
        hvd.allreduce(torch.ones(1), process_set=ps)
