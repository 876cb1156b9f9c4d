"""Horovod's documented behaviour where cohort.torch used to differ (issue 12):
operation names that stay in step, process sets addressed by global ranks,
Horovod's gradient definitions, int16 and bool, Adasum, sparse tensors and
the smaller API points. Run under `cohort run -np 2` and `-np 3`."""
import numpy as np
import pytest
import torch

from cohort import _ops


@pytest.fixture(scope="module")
def pair(hvd):
    """The process set {0, n-1}, added on every rank."""
    ps = hvd.add_process_set([0, hvd.size() - 1])
    yield ps
    hvd.remove_process_set(ps)


# ---- 2: names ----

def test_unnamed_counters_are_per_kind(hvd):
    # An unnamed broadcast counted on rank 0 only (as one that rank alone
    # reached would be) leaves the allreduce names in step.
    if hvd.rank() == 0:
        _ops.names.make("broadcast", None)
    out = hvd.allreduce(torch.ones(3), op=hvd.Sum)
    assert out.tolist() == [float(hvd.size())] * 3
    _ops.names.resync()  # every rank: the broadcast names meet again for later tests


def test_counters_resync_after_an_operation_failed_everywhere(hvd):
    # Ranks whose allreduce counters drifted apart (rank r is r calls ahead)...
    for _ in range(hvd.rank()):
        _ops.names.make("allreduce", None)
    # ...meet again after an operation that failed on every rank.
    with pytest.raises(hvd.CohortError, match="tensor 'parity.mismatch': ranks disagree"):
        hvd.allreduce(torch.ones(2 + hvd.rank()), name="parity.mismatch")
    out = hvd.allreduce(torch.full((2,), float(hvd.rank())), op=hvd.Sum)
    assert out.tolist() == [float(sum(range(hvd.size())))] * 2


def test_objects_are_named_after_their_type(hvd):
    # Counters of the object calls are gone: a rank that made an extra
    # broadcast_object-style name does not shift the next call.
    if hvd.rank() == 0:
        _ops.names.make("broadcast_object", None)
    got = hvd.broadcast_object({"step": 7} if hvd.rank() == 0 else {}, root_rank=0)
    assert got == {"step": 7}
    assert hvd.allgather_object([hvd.rank()]) == [[r] for r in range(hvd.size())]


# ---- 3: process sets take global ranks ----

def test_broadcast_root_is_a_global_rank(hvd, pair):
    last = hvd.size() - 1
    if pair.included():
        got = hvd.broadcast(torch.tensor([hvd.rank()]), root_rank=last, process_set=pair)
        assert got.tolist() == [last]
        obj = hvd.broadcast_object("from %d" % hvd.rank(), root_rank=last, process_set=pair)
        assert obj == "from %d" % last
        assert hvd.allgather_object(hvd.rank(), process_set=pair) == [0, last]
        if hvd.size() > 2:
            with pytest.raises(ValueError, match=r"broadcast: root_rank 1 is not a member of "
                                                 r"process set \d+ \(ranks \[0, %d\]\)" % last):
                hvd.broadcast(torch.zeros(1), root_rank=1, process_set=pair)


def test_optimizer_over_a_set_steps_alone_outside_it(hvd, pair):
    # As Horovod's (test_optimizer_process_sets): members average their
    # gradients over the set, a rank outside it steps on its own gradient.
    w = torch.nn.Parameter(torch.full((2,), float(hvd.rank())))
    opt = hvd.DistributedOptimizer(torch.optim.SGD([w], lr=1.0), named_parameters=[("w", w)],
                                   process_set=pair)
    (w * float(hvd.rank() + 1)).sum().backward()
    opt.step()
    last = hvd.size() - 1
    grad = (1 + (last + 1)) / 2 if pair.included() else hvd.rank() + 1
    assert w.tolist() == [hvd.rank() - grad] * 2


def test_rank_outside_a_set_is_refused(hvd, pair):
    if pair.included():
        return
    with pytest.raises(ValueError, match=r"allreduce: rank 1 is not a member of process set"):
        hvd.allreduce(torch.ones(1), process_set=pair)
    with pytest.raises(ValueError, match=r"broadcast: rank 1 is not a member"):
        hvd.broadcast_object(1, root_rank=0, process_set=pair)


# ---- 4: Horovod's gradient definitions ----

def test_allgather_gradient_averages(hvd):
    n, me = hvd.size(), hvd.rank()
    x = torch.full((me + 1, 2), 1.0, requires_grad=True)
    out = hvd.allgather(x)
    # Every rank weighs the gathered rows by (its rank + 1): the average is (n + 1) / 2.
    out.backward(torch.full(out.shape, float(me + 1)))
    assert x.grad.tolist() == [[(n + 1) / 2] * 2] * (me + 1)


def test_broadcast_gradient_averages_on_root(hvd):
    x = torch.ones(3, requires_grad=True)
    hvd.broadcast(x, root_rank=0).backward(torch.full((3,), float(hvd.rank() + 1)))
    want = (hvd.size() + 1) / 2 if hvd.rank() == 0 else 0.0
    assert x.grad.tolist() == [want] * 3


@pytest.mark.parametrize("op_name,factor", [("Sum", "size"), ("Average", "one")])
def test_reducescatter_gradient(hvd, op_name, factor):
    n = hvd.size()
    x = torch.ones(2 * n, requires_grad=True)
    out = hvd.reducescatter(x, op=getattr(hvd, op_name), prescale_factor=0.5)
    out.backward(torch.ones(out.shape))
    want = 0.5 * (n if factor == "size" else 1)
    assert x.grad.tolist() == [want] * (2 * n)


def test_grouped_gradients(hvd):
    n = hvd.size()
    a = torch.ones(2, requires_grad=True)
    b = torch.ones(n, requires_grad=True)
    ga, = hvd.grouped_allgather([a])
    rs, = hvd.grouped_reducescatter([b], op=hvd.Sum)
    (ga.sum() + rs.sum()).backward()
    assert a.grad.tolist() == [1.0, 1.0]
    assert b.grad.tolist() == [float(n)] * n


# ---- 5: int16 and bool ----

@pytest.mark.parametrize("dtype", [torch.int16, torch.bool])
def test_int16_and_bool_in_every_collective(hvd, dtype):
    n, me = hvd.size(), hvd.rank()
    mine = torch.tensor([me % 2, 1, 0, me == 0]).to(dtype)
    every = [torch.tensor([r % 2, 1, 0, r == 0]).to(dtype) for r in range(n)]
    assert torch.equal(hvd.allgather(mine), torch.cat(every))
    assert torch.equal(hvd.broadcast(mine, root_rank=n - 1), every[n - 1])
    out = hvd.alltoall(mine.repeat(n))
    assert torch.equal(out, torch.cat(every))
    total = hvd.allreduce(mine, op=hvd.Sum)
    low = hvd.allreduce(mine, op=hvd.Min)
    if dtype == torch.bool:  # logical: Sum is "or", Min is "and"
        assert total.tolist() == [n > 1, True, False, True]
        assert low.tolist() == [False, True, False, n == 1]
    else:
        stack = torch.stack(every)
        assert torch.equal(total, stack.sum(0).to(dtype))
        assert torch.equal(low, stack.min(0).values)
        assert hvd.reducescatter(torch.ones(n, dtype=dtype), op=hvd.Sum).tolist() == [n]
    assert total.dtype == dtype


def test_numpy_int16_and_bool(hvd):
    import cohort
    n = hvd.size()
    assert cohort.allreduce(np.array([1, -2], dtype=np.int16), op=cohort.Sum).tolist() == \
        [n, -2 * n]
    assert cohort.allgather(np.array([True])).tolist() == [True] * n


# ---- 6: Adasum ----

def adasum_pair(a, b):
    """The pairwise formula of Maleki et al. (2021), computed directly."""
    dot, aa, bb = float(a @ b), float(a @ a), float(b @ b)
    ca = 1.0 - dot / (2 * aa) if aa >= 1e-8 else 1.0
    cb = 1.0 - dot / (2 * bb) if bb >= 1e-8 else 1.0
    return ca * a + cb * b


def adasum_reference(vectors):
    """Horovod's tree over n ranks: the first 2 * (n - p) ranks pair up
    (p the largest power of two <= n), then neighbours, then pairs of pairs."""
    n = len(vectors)
    p = 1
    while p * 2 <= n:
        p *= 2
    extra = n - p
    level = [adasum_pair(vectors[2 * v], vectors[2 * v + 1]) if v < extra else vectors[v + extra]
             for v in range(p)]
    while len(level) > 1:
        level = [adasum_pair(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


def rank_vectors(n, count, seed):
    gen = torch.Generator().manual_seed(seed)
    vs = [torch.randn(count, generator=gen, dtype=torch.float64) for _ in range(n)]
    vs[0][: count // 2] = 0  # overlapping and partly orthogonal directions
    return vs


@pytest.mark.parametrize("count", [1, 2, 7, 1001])
def test_adasum_matches_the_pairwise_formula(hvd, count):
    n, me = hvd.size(), hvd.rank()
    vs = rank_vectors(n, count, seed=count)
    want = adasum_reference(vs)
    got = hvd.allreduce(vs[me], op=hvd.Adasum)
    assert torch.allclose(got, want, rtol=1e-12, atol=1e-12), (got, want)
    got32 = hvd.allreduce(vs[me].float(), op=hvd.Adasum)
    assert torch.allclose(got32.double(), want, rtol=1e-5, atol=1e-5)
    # Every rank holds the same bits.
    gathered = hvd.allgather(got.reshape(1, -1))
    assert all(torch.equal(gathered[r], got) for r in range(n))


def test_adasum_of_identical_and_zero_vectors(hvd):
    v = torch.tensor([3.0, -4.0], dtype=torch.float64)
    # Adasum(v, v) = v: identical gradients are not added up.
    assert hvd.allreduce(v, op=hvd.Adasum).tolist() == [3.0, -4.0]
    zero = torch.zeros(2, dtype=torch.float64)
    mine = v if hvd.rank() == 0 else zero
    assert hvd.allreduce(mine, op=hvd.Adasum).tolist() == [3.0, -4.0]


def test_adasum_refuses_integers(hvd):
    with pytest.raises(hvd.CohortValueError,
                       match=r"op adasum is only for allreduce of floating-point tensors, "
                             r"got int32"):
        hvd.allreduce(torch.ones(2, dtype=torch.int32), op=hvd.Adasum)


def test_adasum_distributed_optimizer(hvd):
    n, me = hvd.size(), hvd.rank()
    grads = rank_vectors(n, 5, seed=11)
    w = torch.nn.Parameter(torch.ones(5, dtype=torch.float64))
    opt = hvd.DistributedOptimizer(torch.optim.SGD([w], lr=0.5), named_parameters=[("w", w)],
                                   op=hvd.Adasum)
    (w * grads[me]).sum().backward()
    opt.step()
    # Each rank's local step moves w by -0.5 * g_r; Adasum combines those moves.
    want = 1.0 + adasum_reference([-0.5 * g for g in grads])
    assert torch.allclose(w.detach(), want, rtol=1e-12, atol=1e-12)


# ---- 7: sparse ----

def sparse_of_rank(r, n):
    idx = torch.tensor([[r % 3, 3], [0, r + 1]])
    return torch.sparse_coo_tensor(idx, torch.tensor([1.0 + r, 2.0]), (4, n + 1))


@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_sparse_allreduce(hvd, op_name):
    n, me = hvd.size(), hvd.rank()
    mine = sparse_of_rank(me, n)
    dense = sum(sparse_of_rank(r, n).to_dense() for r in range(n))
    if op_name == "Average":
        dense = dense / n
    op = getattr(hvd, op_name)
    got = hvd.synchronize(hvd.sparse_allreduce_async(mine, name="parity.sparse", op=op))
    assert got.is_sparse and got._nnz() == 2 * n  # indices and values gathered, as Horovod
    assert torch.equal(got.to_dense(), dense)
    assert torch.equal(hvd.allreduce(mine, op=op).to_dense(), dense)


@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_sparse_embedding_gradients(hvd, sparse_as_dense):
    n, me = hvd.size(), hvd.rank()
    torch.manual_seed(0)
    emb = torch.nn.Embedding(6, 2, sparse=True)
    start = emb.weight.detach().clone()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=1.0),
                                   named_parameters=emb.named_parameters(),
                                   sparse_as_dense=sparse_as_dense)
    emb(torch.tensor([me, 5])).sum().backward()
    opt.step()
    # The averaged gradient: 1/n on each rank's row, 1 on row 5.
    want = start.clone()
    for r in range(n):
        want[r] -= 1.0 / n
    want[5] -= 1.0
    assert torch.allclose(emb.weight.detach(), want)
    opt.zero_grad()


# ---- 8: smaller points ----

def test_alltoall_splits_must_be_integers(hvd):
    with pytest.raises(ValueError, match=r"alltoall: splits must hold integers, got a "
                                         r"torch.float32 tensor"):
        hvd.alltoall(torch.ones(hvd.size()), splits=torch.ones(hvd.size()))


def test_reducescatter_of_a_scalar_raises(hvd):
    with pytest.raises(ValueError, match=r"reducescatter: the tensor is a scalar \(0-d\)"):
        hvd.reducescatter(torch.tensor(1.0))


def test_fp16_prescale_is_computed_in_float32(hvd):
    n = hvd.size()
    x = torch.tensor([0.1, 1.7, -3.3, 1000.1]).half()
    factor = 0.3
    got = hvd.reducescatter(x.repeat(n), op=hvd.Sum, prescale_factor=factor)
    once = (x.float() * torch.tensor(factor, dtype=torch.float32)).half().float()
    assert torch.equal(got.float(), (once * n).half().float())


def test_broadcast_optimizer_state_without_gradients(hvd):
    torch.manual_seed(hvd.rank())
    model = torch.nn.Linear(3, 2)
    opt = hvd.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    before = [p.detach().clone() for p in model.parameters()]
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    # Zero gradients as after Horovod's dummy step, parameters untouched.
    assert all(torch.equal(p.grad, torch.zeros_like(p)) for p in model.parameters())
    assert all(torch.equal(p, b) for p, b in zip(model.parameters(), before))
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    state = opt.state_dict()["state"]
    got = hvd.allgather_object({k: v["exp_avg"].tolist() for k, v in state.items()})
    assert len(state) == 2 and all(g == got[0] for g in got)


def test_optimizer_leaves_gradients_alone_until_backward(hvd):
    # As Horovod since 0.21 (#2580, sparse gradients): wrapping creates no
    # gradient (a dense zero one would turn an nn.Embedding(sparse=True)'s
    # gradient dense); a trainable parameter that backward never reached is
    # reduced as zeros when the optimizer synchronizes.
    gen, disc = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
    with torch.no_grad():
        gen.weight.fill_(1.0)
        disc.weight.copy_(torch.tensor([[0.5, 2.0]]))
    disc.bias.requires_grad_(False)
    gen_opt = hvd.DistributedOptimizer(torch.optim.SGD(gen.parameters(), lr=0.1),
                                       named_parameters=gen.named_parameters())
    disc_opt = hvd.DistributedOptimizer(torch.optim.SGD(disc.parameters(), lr=0.1),
                                        named_parameters=disc.named_parameters())
    assert all(p.grad is None for p in list(gen.parameters()) + list(disc.parameters()))
    for p in disc.parameters():
        p.requires_grad_(False)
    gen_opt.zero_grad()
    disc_opt.zero_grad()
    disc(gen(torch.full((1, 2), hvd.rank() + 1.0))).sum().backward()
    assert disc.weight.grad is None
    gen_opt.synchronize()
    # d/dW of w_d . (W x + b) is w_d^T x^T, x = rank + 1: averaged over ranks.
    mean = sum(range(1, hvd.size() + 1)) / hvd.size()
    assert gen.weight.grad.tolist() == [[0.5 * mean] * 2, [2.0 * mean] * 2]
    assert gen.bias.grad.tolist() == [0.5, 2.0]
    with gen_opt.skip_synchronize():
        gen_opt.step()
    disc.weight.requires_grad_(True)
    disc_opt.synchronize()
    assert torch.equal(disc.weight.grad, torch.zeros(1, 2)) and disc.bias.grad is None


def test_api_points(hvd, pair):
    with pytest.raises(ValueError, match="mpi_threads_supported: MPI is not enabled"):
        hvd.mpi_threads_supported()
    assert hvd.size_op().item() == hvd.size() and hvd.size_op().dtype == torch.int32
    assert hvd.rank_op().item() == hvd.rank()
    assert hvd.local_rank_op().item() == hvd.local_rank()
    assert hvd.local_size_op().item() == hvd.local_size()
    assert hvd.size_op(pair.process_set_id).item() == 2
    assert hvd.process_set_included_op(pair.process_set_id).item() == int(pair.included())
    err = hvd.HostsUpdatedInterrupt(skip_sync=True)
    assert isinstance(err, RuntimeError) and err.skip_sync
    assert hvd.HorovodInternalError is hvd.CohortError


def test_timeline_marks_cycles_on_request(hvd):
    import os
    import tempfile
    path = hvd.broadcast_object(tempfile.mktemp(prefix="cohort-parity-", suffix=".json")
                                if hvd.rank() == 0 else "", root_rank=0)
    try:
        for mark in (True, False):
            hvd.start_timeline(path, mark_cycles=mark)
            hvd.allreduce(torch.ones(2), name="parity.timeline")
            hvd.barrier()
            hvd.stop_timeline()
            if hvd.rank() == 0:
                with open(path) as f:
                    text = f.read()
                assert "parity.timeline" in text
                assert ("CYCLE_START" in text) == mark
            hvd.barrier()
    finally:
        if hvd.rank() == 0 and os.path.exists(path):
            os.remove(path)
