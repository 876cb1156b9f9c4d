"""The torch.distributed backend "cohort" (cohort.torch.distributed) against
gloo in the same job: every c10d operation on the default "cohort" group is
compared with the same operation on a gloo group over the same ranks (exact
for integer dtypes), and DDP/ZeroRedundancyOptimizer training on both.
Runs under `cohort run -np 2` and `-np 3` (tests/python/CMakeLists.txt)."""
import datetime
import re
import time

import pytest
import torch

from conftest import rank_inputs, under_launcher

INT_DTYPES = [torch.uint8, torch.int8, torch.int32, torch.int64]
DTYPES = INT_DTYPES + [torch.float32, torch.float64]


@pytest.fixture(scope="session")
def dist(request):
    """torch.distributed with the default group on "cohort" and a gloo group
    over every rank (the reference)."""
    if not under_launcher():
        pytest.skip("needs `cohort run -np N` (see tests/python/CMakeLists.txt)")
    import torch.distributed as dist
    import cohort
    import cohort.torch.distributed  # noqa: F401  registers the backend
    dist.init_process_group("cohort", timeout=datetime.timedelta(seconds=60))
    dist.gloo = dist.new_group(backend="gloo")
    yield dist
    if request.session.testsfailed == 0:
        dist.destroy_process_group()
        cohort.shutdown()


def rank(dist):
    return dist.get_rank()


def mine(dist, shape, dtype, seed):
    return rank_inputs(dist.get_world_size(), shape, dtype, seed)[rank(dist)]


def assert_same(got, want, dtype):
    if dtype.is_floating_point:
        torch.testing.assert_close(got, want)
    else:
        assert torch.equal(got, want), (got, want)


def test_backend_is_cohort(dist):
    assert dist.get_backend() == "cohort"
    assert dist.get_backend(dist.gloo) == "gloo"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"])
def test_all_reduce_matches_gloo(dist, dtype, op):
    if op.startswith("B") and dtype.is_floating_point:
        pytest.skip("bitwise ops are for integers")
    x = mine(dist, (5, 3), dtype, seed=hash((str(dtype), op)) % 1000)
    ours, ref = x.clone(), x.clone()
    dist.all_reduce(ours, op=getattr(dist.ReduceOp, op))
    dist.all_reduce(ref, op=getattr(dist.ReduceOp, op), group=dist.gloo)
    assert_same(ours, ref, dtype)


def test_all_reduce_avg_and_premul_sum(dist):
    n = dist.get_world_size()
    x = mine(dist, (7,), torch.float32, seed=3)
    ref = x.clone()
    dist.all_reduce(ref, group=dist.gloo)
    avg = x.clone()
    dist.all_reduce(avg, op=dist.ReduceOp.AVG)
    torch.testing.assert_close(avg, ref / n)
    premul = x.clone()
    dist.all_reduce(premul, op=dist._make_nccl_premul_sum(0.5))
    torch.testing.assert_close(premul, ref * 0.5)


def test_async_op_work_and_future(dist):
    x = mine(dist, (1000,), torch.int64, seed=4)
    ref = x.clone()
    dist.all_reduce(ref, group=dist.gloo)
    works = [dist.all_reduce(t, async_op=True) for t in (x.clone(), x.clone())]
    assert works[0].wait()
    assert works[0].is_completed() and works[0].is_success()
    result = works[1].get_future().wait()
    assert torch.equal(result[0], ref)
    assert torch.equal(works[0].result()[0], ref)
    # completed by polling alone; by a wait with a timeout; or, dropped, when collected
    polled, timed, dropped = x.clone(), x.clone(), x.clone()
    work = dist.all_reduce(polled, async_op=True)
    deadline = time.monotonic() + 30
    while not work.is_completed():
        assert time.monotonic() < deadline, "is_completed() never turned true"
    assert torch.equal(polled, ref)
    assert dist.all_reduce(timed, async_op=True).wait(timeout=datetime.timedelta(seconds=30))
    assert torch.equal(timed, ref)
    dist.all_reduce(dropped, async_op=True)
    assert torch.equal(dropped, ref)


def test_non_contiguous_tensor(dist):
    x = mine(dist, (4, 6), torch.int32, seed=5)
    ours, ref = x.clone().t(), x.clone().t()
    dist.all_reduce(ours)
    dist.all_reduce(ref, group=dist.gloo)
    assert torch.equal(ours, ref)


def test_all_reduce_coalesced(dist):
    xs = [mine(dist, (3,), torch.float32, seed=6), mine(dist, (2, 2), torch.float32, seed=7)]
    ours = [x.clone() for x in xs]
    dist.all_reduce_coalesced(ours)
    for x, got in zip(xs, ours):
        ref = x.clone()
        dist.all_reduce(ref, group=dist.gloo)
        assert torch.equal(got, ref)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float16, torch.bfloat16])
def test_broadcast_every_root(dist, dtype):
    for root in range(dist.get_world_size()):
        x = mine(dist, (4, 5), dtype, seed=10 + root)
        ours = x.clone()
        dist.broadcast(ours, root)
        assert torch.equal(ours, rank_inputs(dist.get_world_size(), (4, 5), dtype, 10 + root)[root])
        if dtype != torch.bfloat16:  # gloo has no bfloat16
            ref = x.clone()
            dist.broadcast(ref, root, group=dist.gloo)
            assert torch.equal(ours, ref)


@pytest.mark.parametrize("dtype", [torch.int32, torch.float32])
def test_all_gather_and_into_tensor(dist, dtype):
    n = dist.get_world_size()
    x = mine(dist, (2, 3), dtype, seed=20)
    ours = [torch.zeros_like(x) for _ in range(n)]
    ref = [torch.zeros_like(x) for _ in range(n)]
    dist.all_gather(ours, x)
    dist.all_gather(ref, x, group=dist.gloo)
    for a, b in zip(ours, ref):
        assert torch.equal(a, b)
    flat = torch.zeros((2 * n, 3), dtype=dtype)
    dist.all_gather_into_tensor(flat, x)
    assert torch.equal(flat, torch.cat(ref))
    base = torch.zeros((2 * n, 3), dtype=dtype)
    dist._all_gather_base(base, x)
    assert torch.equal(base, torch.cat(ref))
    y = mine(dist, (4,), dtype, seed=21)
    lists = [[torch.zeros_like(x), torch.zeros_like(y)] for _ in range(n)]
    dist.all_gather_coalesced(lists, [x, y])
    ys = rank_inputs(n, (4,), dtype, 21)
    for src in range(n):
        assert torch.equal(lists[src][0], ref[src]) and torch.equal(lists[src][1], ys[src])


@pytest.mark.parametrize("op", ["SUM", "MAX", "AVG"])
def test_reduce_scatter_and_tensor(dist, op):
    # gloo has no reduce_scatter in torch 1.13: its allreduce, sliced, is the reference.
    n, r = dist.get_world_size(), rank(dist)
    dtype = torch.float64 if op == "AVG" else torch.int64
    inputs = [mine(dist, (2, 3), dtype, seed=30 + i) for i in range(n)]
    full = torch.cat(inputs)
    ref = full.clone()
    dist.all_reduce(ref, op=dist.ReduceOp.SUM if op == "AVG" else getattr(dist.ReduceOp, op),
                    group=dist.gloo)
    want = ref[2 * r:2 * r + 2] / (n if op == "AVG" else 1)
    out = torch.zeros((2, 3), dtype=dtype)
    dist.reduce_scatter(out, inputs, op=getattr(dist.ReduceOp, op))
    assert_same(out, want, dtype)
    out2 = torch.zeros((2, 3), dtype=dtype)
    dist.reduce_scatter_tensor(out2, full, op=getattr(dist.ReduceOp, op))
    assert_same(out2, want, dtype)


def test_all_to_all_single_even_and_with_splits(dist):
    n, r = dist.get_world_size(), rank(dist)
    x = torch.arange(n * 2 * 3, dtype=torch.int64).view(n * 2, 3) + 100 * r
    ours, ref = torch.zeros_like(x), torch.zeros_like(x)
    dist.all_to_all_single(ours, x)
    dist.all_to_all_single(ref, x, group=dist.gloo)
    assert torch.equal(ours, ref)
    # rank r sends p + r + 1 rows to rank p
    in_splits = [p + r + 1 for p in range(n)]
    out_splits = [r + p + 1 for p in range(n)]
    x = torch.arange(sum(in_splits) * 2, dtype=torch.float32).view(-1, 2) + 100 * r
    ours = torch.zeros((sum(out_splits), 2))
    ref = torch.zeros((sum(out_splits), 2))
    dist.all_to_all_single(ours, x, out_splits, in_splits)
    dist.all_to_all_single(ref, x, out_splits, in_splits, group=dist.gloo)
    assert torch.equal(ours, ref)


def test_all_to_all_lists(dist):
    n, r = dist.get_world_size(), rank(dist)
    inputs = [torch.full((p + 1,), r * 10 + p, dtype=torch.int32) for p in range(n)]
    outputs = [torch.zeros(r + 1, dtype=torch.int32) for _ in range(n)]
    dist.all_to_all(outputs, inputs)
    for src in range(n):
        assert torch.equal(outputs[src], torch.full((r + 1,), src * 10 + r, dtype=torch.int32))


@pytest.mark.parametrize("op", ["SUM", "MIN", "BOR"])
def test_reduce_every_root(dist, op):
    for root in range(dist.get_world_size()):
        x = mine(dist, (6,), torch.int64, seed=40 + root)
        ours, ref = x.clone(), x.clone()
        dist.reduce(ours, root, op=getattr(dist.ReduceOp, op))
        dist.reduce(ref, root, op=getattr(dist.ReduceOp, op), group=dist.gloo)
        if rank(dist) == root:
            assert torch.equal(ours, ref)


def test_gather_and_scatter_every_root(dist):
    n, r = dist.get_world_size(), rank(dist)
    for root in range(n):
        x = mine(dist, (3,), torch.float32, seed=50 + root)
        ours = [torch.zeros(3) for _ in range(n)] if r == root else None
        ref = [torch.zeros(3) for _ in range(n)] if r == root else None
        dist.gather(x, ours, dst=root)
        dist.gather(x, ref, dst=root, group=dist.gloo)
        if r == root:
            assert all(torch.equal(a, b) for a, b in zip(ours, ref))
        pieces = [torch.full((2, 2), float(root * 10 + p)) for p in range(n)] if r == root else None
        got, want = torch.zeros(2, 2), torch.zeros(2, 2)
        dist.scatter(got, pieces, src=root)
        dist.scatter(want, pieces, src=root, group=dist.gloo)
        assert torch.equal(got, want)


def test_barrier_and_monitored_barrier(dist):
    dist.barrier()
    assert dist.barrier(async_op=True).wait()
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=30), wait_all_ranks=True)


def test_send_recv_isend_irecv_and_any_source(dist):
    n, r = dist.get_world_size(), rank(dist)
    nxt, prev = (r + 1) % n, (r - 1) % n
    dist.send(torch.full((3,), float(r)), nxt)
    got = torch.zeros(3)
    dist.recv(got, prev)
    assert torch.equal(got, torch.full((3,), float(prev)))
    send = dist.isend(torch.arange(4, dtype=torch.int64) * r, nxt, tag=7)
    recv = dist.irecv(got_i := torch.zeros(4, dtype=torch.int64), prev, tag=7)
    send.wait()
    recv.wait()
    assert torch.equal(got_i, torch.arange(4, dtype=torch.int64) * prev)
    # recv from any source: rank 0 collects one message from every other rank.
    if r == 0:
        senders = set()
        for _ in range(n - 1):
            t = torch.zeros(1, dtype=torch.int32)
            src = dist.recv(t)
            assert t.item() == src * 11
            senders.add(src)
        assert senders == set(range(1, n))
    else:
        dist.send(torch.tensor([r * 11], dtype=torch.int32), 0)
    dist.barrier()


MESSAGE_DTYPES = DTYPES + [torch.float16, torch.bfloat16, torch.bool]


def message_input(n, src, dtype):
    x = rank_inputs(n, (5, 3), torch.int64, seed=80 + MESSAGE_DTYPES.index(dtype))[src]
    return (x % 2).to(dtype) if dtype == torch.bool else x.to(dtype)


@pytest.mark.parametrize("dtype", MESSAGE_DTYPES)
def test_send_recv_every_dtype_exact(dist, dtype):
    """Every rank sends rank 0 a tensor of this dtype; what arrives is what
    was sent and what gloo delivers for the same send, bit for bit."""
    n, r = dist.get_world_size(), rank(dist)
    if r == 0:
        for src in range(1, n):
            ours, ref = torch.zeros(5, 3, dtype=dtype), torch.zeros(5, 3, dtype=dtype)
            dist.recv(ours, src)
            dist.recv(ref, src, group=dist.gloo)
            assert torch.equal(ours.view(torch.uint8), ref.view(torch.uint8)), (src, ours, ref)
            assert torch.equal(ours, message_input(n, src, dtype))
    else:
        dist.send(message_input(n, r, dtype), 0)
        dist.send(message_input(n, r, dtype), 0, group=dist.gloo)
    dist.barrier()


def test_messages_match_by_tag_and_keep_their_order(dist):
    """Tags received in the opposite order to sending; several messages with
    one tag arrive in send order; large and empty messages; non-contiguous
    tensors on both sides."""
    n, r = dist.get_world_size(), rank(dist)
    if r == 0:
        big = torch.arange(3 << 20, dtype=torch.float32)  # 12 MiB: more than any ring holds
        works = [dist.isend(torch.full((2,), float(t)), 1, tag=t) for t in (1, 2, 3)]
        works += [dist.isend(torch.tensor([i], dtype=torch.int64), 1, tag=9) for i in range(4)]
        works.append(dist.isend(big, 1, tag=4))
        works.append(dist.isend(torch.zeros(0), 1, tag=5))
        works.append(dist.isend(torch.arange(12.0).view(3, 4).t(), 1, tag=6))
        for w in works:
            w.wait()
    elif r == 1:
        for t in (3, 2, 1):
            got = torch.zeros(2)
            dist.recv(got, 0, tag=t)
            assert torch.equal(got, torch.full((2,), float(t)))
        got = [torch.zeros(1, dtype=torch.int64) for _ in range(4)]
        for w in [dist.irecv(g, 0, tag=9) for g in got]:
            w.wait()
        assert [g.item() for g in got] == [0, 1, 2, 3]
        empty = torch.zeros(0)
        dist.recv(empty, 0, tag=5)
        big = torch.zeros(3 << 20)
        dist.recv(big, 0, tag=4)
        assert torch.equal(big, torch.arange(3 << 20, dtype=torch.float32))
        strided = torch.zeros(3, 4).t()  # non-contiguous target
        dist.recv(strided, 0, tag=6)
        assert torch.equal(strided, torch.arange(12.0).view(3, 4).t())
    dist.barrier()


def test_message_of_another_size_is_an_error_naming_both(dist):
    r = rank(dist)
    if r == 0:
        dist.send(torch.ones(4), 1, tag=11)
    elif r == 1:
        with pytest.raises(RuntimeError, match=r"cohort recv: rank 0 \(host .*\) sent 16 bytes "
                           r"\(tag 11\) but the receiving buffer holds 8$"):
            dist.recv(torch.zeros(2), 0, tag=11)
    with pytest.raises(RuntimeError, match=r"cohort send: bad destination rank %d \(group of %d, "
                       r"this rank %d\)" % (r, dist.get_world_size(), r)):
        dist.send(torch.ones(1), r)
    dist.barrier()


def test_new_group_subset_and_subgroups(dist):
    n, r = dist.get_world_size(), rank(dist)
    members = [0, n - 1]
    group = dist.new_group(members)
    gloo = dist.new_group(members, backend="gloo")
    if r in members:
        assert dist.get_backend(group) == "cohort"
        x = mine(dist, (4,), torch.int64, seed=60)
        ours, ref = x.clone(), x.clone()
        dist.all_reduce(ours, group=group)
        dist.all_reduce(ref, group=gloo)
        assert torch.equal(ours, ref)
        b = torch.full((2,), float(r))
        dist.broadcast(b, n - 1, group=group)  # the global rank; torch maps it
        assert torch.equal(b, torch.full((2,), float(n - 1)))
    # disjoint subgroups, each rank in one, used at the same time (what
    # new_subgroups builds; torch 1.13 refuses new_subgroups without CUDA)
    subgroups = [list(range(i, min(i + 2, n))) for i in range(0, n, 2)]
    created = [dist.new_group(ranks) for ranks in subgroups]
    sub_ranks, sub = next((ranks, g) for ranks, g in zip(subgroups, created) if r in ranks)
    x = torch.tensor([r + 1], dtype=torch.int64)
    dist.all_reduce(x, group=sub)
    assert x.item() == sum(k + 1 for k in sub_ranks)
    dist.barrier()


def test_mismatched_shapes_name_the_ranks(dist):
    n, r = dist.get_world_size(), rank(dist)
    x = torch.ones(3 + (1 if r == n - 1 else 0))
    with pytest.raises(RuntimeError) as info:
        dist.all_reduce(x)
    others = ", ".join(str(k) for k in range(n - 1))
    want = "ranks disagree on the shape: rank%s %s: [3]; rank %d: [4]" % (
        "s" if n > 2 else "", others, n - 1)
    assert str(info.value).startswith("cohort allreduce: tensor 'c10d.0.0.allreduce.")
    assert str(info.value).endswith(want), str(info.value)
    y = torch.ones(2)  # the group works on after the error
    dist.all_reduce(y)
    assert torch.equal(y, torch.full((2,), float(n)))


def test_bad_input_is_a_clear_error(dist):
    with pytest.raises(RuntimeError, match="cohort allreduce: unsupported dtype Bool"):
        dist.all_reduce(torch.ones(2, dtype=torch.bool))
    with pytest.raises(RuntimeError, match="bitwise reductions need an integer dtype"):
        dist.all_reduce(torch.ones(2), op=dist.ReduceOp.BAND)
    with pytest.raises(RuntimeError, match="cohort _allgather_base: the output must hold"):
        dist.all_gather_into_tensor(torch.zeros(1), torch.ones(2))


def test_group_timeout_bounds_a_receive(dist):
    n, r = dist.get_world_size(), rank(dist)
    group = dist.new_group(list(range(n)), timeout=datetime.timedelta(seconds=1))
    if r == 0:  # nobody sends: the wait ends at the group's timeout
        work = dist.irecv(torch.zeros(1), src=n - 1, group=group)
        with pytest.raises(RuntimeError, match=r"cohort recv: no message from rank %d \(host "
                           r".*\) with tag 0 within 1 s$" % (n - 1)):
            work.wait()
    dist.barrier()


def first_line(error):
    return str(error).split("\n")[0]


_GLOO_CONNECT_FAILURES = ("Socket Timeout", "Connection reset by peer", "Connection refused",
                          "Connection closed by peer")


def gloo_group(dist, timeout, attempts=5):
    """dist.new_group(backend="gloo", timeout=timeout), made again by every
    rank while any rank's gloo could not connect within `timeout` ("Socket
    Timeout", or its peer's view of it: 1 s does not always cover it on a
    loaded machine). The timeout
    cannot simply be longer: gloo also waits it out in the scenarios' late
    receives. Every rank learns the outcome over the default (cohort) group."""
    for _ in range(attempts):
        try:
            group, failed = dist.new_group(backend="gloo", timeout=timeout), 0
        except RuntimeError as e:
            # A rank that timed out drops its half-made pairs, so a peer
            # may see the reset or refusal instead of the timeout.
            if not any(text in str(e) for text in _GLOO_CONNECT_FAILURES):
                raise
            group, failed = None, 1
        flags = torch.tensor([failed])
        dist.all_reduce(flags)
        if flags.item() == 0:
            return group
    raise RuntimeError("gloo could not connect its group within %s in %d attempts"
                       % (timeout, attempts))


def monitored_barrier_errors(dist, group, late, **kwargs):
    """Every rank's monitored_barrier over `group` (1 s timeout unless given)
    where the ranks in `late` arrive only after rank 0 gave up: the error
    text, or None. The default cohort group orders the steps."""
    r = rank(dist)
    kwargs.setdefault("timeout", datetime.timedelta(seconds=1))
    error = None
    if r in late:
        dist.barrier()  # rank 0 has given up by then
    try:
        dist.monitored_barrier(group, **kwargs)
    except RuntimeError as e:
        error = str(e)
    if r not in late:
        dist.barrier()
    dist.barrier()
    return error


@pytest.mark.parametrize("scenario", ["last_late", "wait_all_ranks", "timeout_0"])
def test_monitored_barrier_reports_as_gloo_does(dist, scenario):
    # torch 1.13's contract (ProcessGroupGloo::monitoredBarrier): rank 0 names
    # the first rank missing, or every one with wait_all_ranks; with no time
    # left it says it timed out itself; the other ranks report their own
    # failure, not rank 0's. Each backend runs the scenario on a group of its
    # own (1 s timeout); the first lines of the messages agree.
    n, r = dist.get_world_size(), rank(dist)
    kwargs = {"last_late": {}, "wait_all_ranks": {"wait_all_ranks": True},
              "timeout_0": {"timeout": datetime.timedelta(seconds=0)}}[scenario]
    late = {"last_late": {n - 1}, "wait_all_ranks": set(range(1, n)), "timeout_0": set()}[scenario]
    one_second = datetime.timedelta(seconds=1)
    ours = monitored_barrier_errors(dist, dist.new_group(timeout=one_second), late, **kwargs)
    theirs = monitored_barrier_errors(dist, gloo_group(dist, one_second), late, **kwargs)
    if r == 0:
        want = {"last_late": "[Rank 0]: Rank %d failed to pass monitoredBarrier in 1000 ms" % (n - 1),
                "wait_all_ranks": "[Rank 0]: Ranks %s failed to pass monitoredBarrier in 1000 ms" %
                                  ", ".join(str(k) for k in range(1, n)),
                "timeout_0": "[Rank 0]: Rank 1 failed to pass monitoredBarrier in 0 ms"}[scenario]
        assert first_line(ours) == first_line(theirs) == want, (ours, theirs)
        if scenario == "timeout_0":
            assert "Rank 0 timed out in monitoredBarrier after 0 ms." in ours
            assert "Rank 0 timed out in monitoredBarrier after 0 ms." in theirs
        return
    own = ("Rank %d successfully reached monitoredBarrier, but received errors while waiting "
           "for send/recv from rank 0. Please check rank 0 logs for faulty rank." % r)
    assert first_line(ours) == own, ours
    if r not in late:  # gloo tells a late rank only that rank 0 closed the connection
        assert first_line(theirs) == own, theirs


def test_monitored_barrier_passes_when_every_rank_arrives(dist):
    for wait_all_ranks in (False, True):
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=30),
                               wait_all_ranks=wait_all_ranks)


def test_barrier_timeout_is_worded_as_torch_words_it(dist):
    # gloo: "Timed out waiting 1000ms for recv operation to complete"; cohort
    # leads with the same words, then names who is missing.
    n, r = dist.get_world_size(), rank(dist)
    one_second = datetime.timedelta(seconds=1)
    ours, theirs = dist.new_group(timeout=one_second), \
        dist.new_group(backend="gloo", timeout=one_second)
    errors = {}
    for name, group in (("cohort", ours), ("gloo", theirs)):
        if r == n - 1:
            dist.barrier()  # late: after the others timed out
            if name == "cohort":  # meets the others' barrier, still announced
                dist.barrier(group)
            continue
        with pytest.raises(RuntimeError) as e:
            dist.barrier(group)
        errors[name] = str(e.value)
        dist.barrier()
    if r != n - 1:
        assert "Timed out waiting 1000ms for " in errors["gloo"]
        assert re.match(r"Timed out waiting 1000ms for barrier to complete: cohort barrier: "
                        r"barrier '.*' did not complete within 1 s: not submitted by rank %d "
                        r"\(host " % (n - 1), errors["cohort"]), errors["cohort"]


def sparse_input(dist, seed, of=None):
    """A 2-D sparse COO tensor (6 x 3) with rank-dependent positions, some
    shared with other ranks, some repeated (uncoalesced): rank `of`'s
    (default: this rank's)."""
    k = rank(dist) if of is None else of
    gen = torch.Generator().manual_seed(seed + k)
    idx = torch.randint(0, 6, (2, 5), generator=gen) % torch.tensor([[6], [3]])
    return torch.sparse_coo_tensor(idx, torch.arange(5, dtype=torch.float32) + k, (6, 3))


def test_sparse_all_reduce_matches_gloo(dist):
    ours, theirs = sparse_input(dist, 1), sparse_input(dist, 1)
    dist.all_reduce(ours)
    dist.all_reduce(theirs, group=dist.gloo)
    assert ours.is_sparse
    assert torch.equal(ours.coalesce().to_dense(), theirs.coalesce().to_dense())
    assert torch.equal(ours.coalesce().to_dense(), torch.stack(
        [sparse_input(dist, 1, of=k).to_dense() for k in range(dist.get_world_size())]).sum(0))
    work = dist.all_reduce(sparse_input(dist, 2), async_op=True)  # with a future, as DDP uses it
    assert work.get_future().wait()[0].is_sparse
    with pytest.raises(RuntimeError, match="sparse tensors support ReduceOp.SUM only"):
        dist.all_reduce(sparse_input(dist, 3), op=dist.ReduceOp.MAX)


def test_object_collectives_match_gloo(dist):
    n, r = dist.get_world_size(), rank(dist)
    obj = {"rank": r, "items": list(range(r + 1))}
    for group in (None, dist.gloo):
        got = [None] * n
        dist.all_gather_object(got, obj, group=group)
        assert got == [{"rank": k, "items": list(range(k + 1))} for k in range(n)]
        objects = ["from root", {"x": 1}] if r == n - 1 else [None, None]
        dist.broadcast_object_list(objects, src=n - 1, group=group)
        assert objects == ["from root", {"x": 1}]
        out = [None]
        dist.scatter_object_list(out, [("to", k) for k in range(n)] if r == 0 else None, src=0,
                                 group=group)
        assert out == [("to", r)]
        gathered = [None] * n if r == 0 else None
        dist.gather_object(("from", r), gathered, dst=0, group=group)
        if r == 0:
            assert gathered == [("from", k) for k in range(n)]
