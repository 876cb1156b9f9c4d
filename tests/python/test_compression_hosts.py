"""Compression.powersgd and Compression.topk once per host (host_reduction.py)
and overlapped with backward, on emulated hosts: 4 ranks as 2 hosts x 2
(COHORT_TEST_HOSTS=0,0,1,1: sharded by default) and 3 ranks as hosts of 2
and 1 (0,0,1: the leader's way), see tests/python/CMakeLists.txt. The
results against a plain torch reference of "sum per host, then PowerSGD/
top-k across the host sums (sharded: each share with its own state),
/ ranks" (/ 4 for 2 x 2), through the reducer and through
DistributedOptimizer; every rank's parameters identical; overlap
bit-identical to reducing at synchronize(); the states saved round-trip,
other states are named and their errors not used; close() removes the
process sets."""
import copy
import logging
import os
import pickle
import warnings

import pytest
import torch

from compression_reference import (SHAPES, assert_results_close, gradients, reference_powersgd,
                                   reference_topk)

# Each host's ranks, from the emulation (hosts numbered by their first rank).
_HOST_OF = [int(h) for h in os.environ.get("COHORT_TEST_HOSTS", "0").split(",")]
HOSTS = [[r for r, h in enumerate(_HOST_OF) if h == host] for host in sorted(set(_HOST_OF))]
RANKS = len(_HOST_OF)
# Sharding needs the same number of ranks on every host.
SHARDED = len({len(ranks) for ranks in HOSTS}) == 1
DEFAULT_MODE = "shard" if SHARDED else "host"


@pytest.fixture(scope="module")
def layout(hvd):
    if len(HOSTS) < 2 or hvd.size() != RANKS:
        pytest.skip("needs several emulated hosts (COHORT_TEST_HOSTS=0,0,1,1 with 4 ranks)")
    from cohort.torch.host_reduction import HostLayout
    return HostLayout.of_job().connect()


@pytest.fixture
def sharded(layout):
    if not SHARDED:
        pytest.skip("needs hosts of equal size (COHORT_TEST_HOSTS=0,0,1,1)")
    return layout


def host_sums(step):
    """The reference's inputs: each host's sum of its ranks' gradients."""
    return [{name: sum(gradients(r, step)[name] for r in ranks) for name in SHAPES}
            for ranks in HOSTS]


def per_job(reference):
    """The reference averaged over the hosts' sums, times hosts / ranks:
    the average over every rank (/ 4 for 2 hosts of 2, not / 2)."""
    return [{name: t * len(HOSTS) / RANKS for name, t in step.items()} for step in reference]


def test_the_layout_of_emulated_hosts(hvd, layout):
    leaders = [ranks[0] for ranks in HOSTS]
    assert layout.host_ranks == HOSTS and layout.leaders == leaders
    assert layout.is_leader == (hvd.rank() in leaders)
    assert (layout.leader_comm is not None) == layout.is_leader
    mine = [ranks for ranks in HOSTS if hvd.rank() in ranks][0]
    assert (layout.host_comm.size if layout.host_comm else 1) == len(mine)
    assert layout.mode("auto") == DEFAULT_MODE and layout.mode("host") == DEFAULT_MODE
    assert layout.mode("leader") == "host" and layout.mode("rank") == "rank"
    assert layout.local_index == mine.index(hvd.rank()) and layout.local_size == len(mine)
    if SHARDED:  # a process set per local index: local index i of every host
        assert layout.shard_comm.process_set.ranks == [ranks[layout.local_index]
                                                        for ranks in HOSTS]
    else:
        assert layout.shard_comm is None


def test_shares_are_whole_tensors_balanced_or_equal_ranges():
    from cohort.torch.host_reduction import split_shares
    names = ["a", "b", "c"]
    tensors = [torch.zeros(10), torch.zeros(5, 6), torch.zeros(20)]
    # The largest first to the least loaded share: b (30) to 0, c (20) to
    # 1, a (10) to 1; each share in name order.
    assert split_shares(names, tensors, 2, by_range=False) == [
        [("b", 1, 0, 30)], [("a", 0, 0, 10), ("c", 2, 0, 20)]]
    assert split_shares(names, tensors, 2, by_range=True) == [
        [("a", 0, 0, 10), ("b[0:20]", 1, 0, 20)], [("b[20:30]", 1, 20, 30), ("c", 2, 0, 20)]]
    assert split_shares(names, tensors, 4, by_range=False) == [
        [("b", 1, 0, 30)], [("c", 2, 0, 20)], [("a", 0, 0, 10)], []]
    assert split_shares(["x"], [torch.zeros(3)], 2, by_range=True) == [
        [("x[0:1]", 0, 0, 1)], [("x[1:3]", 0, 1, 3)]]
    # In another order, the same pieces (by name): shares follow the names.
    order = [2, 0, 1]
    for by_range in (False, True):
        again = split_shares([names[j] for j in order], [tensors[j] for j in order], 2, by_range)
        assert [[(n, order[j], a, b) for n, j, a, b in share] for share in again] == \
            split_shares(names, tensors, 2, by_range)


def reduce_per_host(hvd, layout, reducer, steps, how):
    """`steps` steps of gradients(rank, step) reduced by `how`
    (host_reduction.once_per_host or .sharded_per_host)."""
    from cohort.torch.reducer_comm import drive
    out = []
    for step in range(steps):
        grads = gradients(hvd.rank(), step)
        names = sorted(grads)
        drive(how(reducer, layout, names, [grads[n] for n in names], ""))
        reducer.end_step()
        out.append(grads)
    return out


def reduce_once_per_host(hvd, layout, reducer, steps):
    from cohort.torch.host_reduction import once_per_host
    return reduce_per_host(hvd, layout, reducer, steps, once_per_host)


def reduce_sharded(hvd, layout, reducer, steps):
    from cohort.torch.host_reduction import sharded_per_host
    return reduce_per_host(hvd, layout, reducer, steps, sharded_per_host)


def my_share(layout, by_range):
    """The names of this rank's share of SHAPES' gradients (in name order)."""
    from cohort.torch.host_reduction import split_shares
    names = sorted(SHAPES)
    shares = split_shares(names, [torch.zeros(*SHAPES[n]) for n in names], layout.local_size,
                          by_range)
    return [name for name, _, _, _ in shares[layout.local_index]]


def assert_shares_kept_apart(hvd, layout, keys, every):
    """`keys` (this rank's state's) are its share's, the same on each host's
    rank of that share, none in two shares; together they are `every`
    (None: not checked)."""
    from cohort.torch import allgather_object
    everyone = allgather_object((layout.local_index, sorted(keys)))
    by_share = {}
    for share, theirs in everyone:
        assert by_share.setdefault(share, theirs) == theirs
    together = [k for theirs in by_share.values() for k in theirs]
    assert len(by_share) == layout.local_size and len(together) == len(set(together))
    assert all(by_share.values())
    if every is not None:
        assert sorted(together) == sorted(every)


@pytest.mark.parametrize("rank,start_iter", [(1, 0), (2, 2)])
def test_powersgd_sharded_matches_the_reference(hvd, sharded, rank, start_iter):
    """Each matrix compressed across the hosts by one rank per host: the
    same as compressing every matrix of the host sums (a matrix's result
    depends on itself only); its error and warm start on that rank alone."""
    from cohort.torch import Compression
    reducer = Compression.powersgd(rank=rank, start_iter=start_iter, min_compression_rate=1.5)
    ours = reduce_sharded(hvd, sharded, reducer, 4)
    assert_results_close(ours, per_job(reference_powersgd(len(HOSTS), 4, rank, start_iter, 1.5,
                                                          inputs=host_sums)))
    mine = my_share(sharded, by_range=False)
    compressed = [n for n in SHAPES if reducer.plan(torch.zeros(*SHAPES[n])) > 0]
    assert set(reducer.q) == set(reducer.error) == set(mine) & set(compressed)
    assert_shares_kept_apart(hvd, sharded, reducer.q, compressed)


def test_a_group_of_several_dtypes_goes_the_leaders_way(hvd, sharded):
    """One flat buffer cannot hold float64 and float32: such a group is
    reduced as the leader mode reduces it (and gives its results)."""
    from cohort.torch import Compression
    from cohort.torch.host_reduction import once_per_host, sharded_per_host
    from cohort.torch.reducer_comm import drive

    def mixed(how):
        reducer = Compression.topk(0.05)
        out = []
        for step in range(2):
            grads = gradients(hvd.rank(), step)
            grads["b.bias"] = grads["b.bias"].float()
            names = sorted(grads)
            drive(how(reducer, sharded, names, [grads[n] for n in names], ""))
            reducer.end_step()
            out.append(grads)
        return out, reducer
    ours, reducer = mixed(sharded_per_host)
    theirs, _ = mixed(once_per_host)
    for a, b in zip(ours, theirs):
        for name in a:
            assert a[name].dtype == b[name].dtype and torch.equal(a[name], b[name]), name
    assert bool(reducer.error) == sharded.is_leader


def host_sums_in_pieces(layout, names=None):
    """host_sums(step) cut into the pieces of the top-k shares of a group of
    `names` (by default SHAPES' in name order)."""
    from cohort.torch.host_reduction import split_shares
    names = names or sorted(SHAPES)

    def inputs(step):
        out = []
        for sums in host_sums(step):
            flat = [sums[n].reshape(-1) for n in names]
            pieces = split_shares(names, flat, layout.local_size, by_range=True)
            out.append({name: flat[j][a:b] for share in pieces for name, j, a, b in share})
        return out
    return inputs


def joined(reference):
    """A reference over pieces "name[a:b]" put back into SHAPES' tensors."""
    out = []
    for step in reference:
        whole = {name: torch.zeros(*shape, dtype=torch.float64).reshape(-1)
                 for name, shape in SHAPES.items()}
        for piece, t in step.items():
            name, _, cut = piece.partition("[")
            a, b = (int(x) for x in cut.rstrip("]").split(":")) if cut else (0, t.numel())
            whole[name][a:b] = t
        out.append({name: t.reshape(SHAPES[name]) for name, t in whole.items()})
    return out


@pytest.mark.parametrize("ratio", [0.05, 0.3])
def test_topk_sharded_matches_the_reference(hvd, sharded, ratio):
    """The flattened group in equal ranges, each sparsified across the hosts
    by one rank per host with the range's own errors."""
    from cohort.torch import Compression
    reducer = Compression.topk(ratio)
    ours = reduce_sharded(hvd, sharded, reducer, 3)
    ref = reference_topk(len(HOSTS), 3, ratio, inputs=host_sums_in_pieces(sharded))
    assert_results_close(ours, per_job(joined(ref)))
    # e.weight (120000 elements, the last in name order) is cut in two.
    assert set(reducer.error) <= set(my_share(sharded, by_range=True))
    assert any(name.startswith("e.weight[") for name in reducer.error)


@pytest.mark.parametrize("rank,start_iter", [(1, 0), (2, 2)])
def test_powersgd_once_per_host_matches_the_reference(hvd, layout, rank, start_iter):
    from cohort.torch import Compression
    reducer = Compression.powersgd(rank=rank, start_iter=start_iter, min_compression_rate=1.5)
    ours = reduce_once_per_host(hvd, layout, reducer, 4)
    assert_results_close(ours, per_job(reference_powersgd(len(HOSTS), 4, rank, start_iter, 1.5,
                                                          inputs=host_sums)))
    # Only the leaders compress and keep errors and warm starts.
    assert bool(reducer.error) == layout.is_leader and bool(reducer.q) == layout.is_leader


@pytest.mark.parametrize("ratio", [0.05, 0.3])
def test_topk_once_per_host_matches_the_reference(hvd, layout, ratio):
    from cohort.torch import Compression
    reducer = Compression.topk(ratio)
    ours = reduce_once_per_host(hvd, layout, reducer, 3)
    assert_results_close(ours, per_job(reference_topk(len(HOSTS), 3, ratio, inputs=host_sums)))
    assert bool(reducer.error) == layout.is_leader


class Linear(torch.nn.Module):
    """Parameters named as SHAPES; loss() makes each one's gradient the
    rank's gradients(rank, step), so SGD at lr 1 from 0 leaves minus the
    sum of the reduced gradients."""

    def __init__(self):
        super().__init__()
        for name, shape in sorted(SHAPES.items()):
            module, leaf = name.split(".")
            if not hasattr(self, module):
                setattr(self, module, torch.nn.Module())
            setattr(getattr(self, module), leaf,
                    torch.nn.Parameter(torch.zeros(*shape, dtype=torch.float64)))

    def loss(self, rank, step):
        grads = gradients(rank, step)
        return sum((p * grads[name]).sum() for name, p in self.named_parameters())


# The optimizers a test made, closed after it (close_optimizers).
_OPEN = []


@pytest.fixture(autouse=True)
def close_optimizers():
    """Closes the optimizers each test made, in the order made (collective:
    every rank runs the same tests), so their process sets do not pile up."""
    yield
    while _OPEN:
        _OPEN.pop(0).close()


def optimizer(hvd, model, compression, groups=None, keep_open=False):
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                   named_parameters=model.named_parameters(),
                                   compression=compression, groups=groups)
    if not keep_open:
        _OPEN.append(opt)
    return opt


def train(hvd, compression, steps, groups=None, state=None, check=None):
    model = Linear()
    opt = optimizer(hvd, model, compression, groups)
    if state is not None:
        model.load_state_dict(state[0])
        opt.load_state_dict(state[1])
    first = 0 if state is None else state[2]
    for step in range(first, first + steps):
        opt.zero_grad()
        model.loss(hvd.rank(), step).backward()
        if check is not None:
            check(opt)
        opt.step()
    return model, opt


def parameters(model):
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def assert_identical_on_every_rank(hvd, model):
    from cohort.torch import allgather_object
    everyone = allgather_object(pickle.dumps(parameters(model)))
    mine = parameters(model)
    for other in everyone:
        theirs = pickle.loads(other)
        for name in mine:
            assert torch.equal(theirs[name], mine[name]), name


def cumulative_minus(reference):
    """Parameters after SGD at lr 1 on the reference's reduced gradients."""
    total = {name: torch.zeros(*shape, dtype=torch.float64) for name, shape in SHAPES.items()}
    for step in reference:
        for name in total:
            total[name] -= step[name]
    return total


@pytest.mark.parametrize("make,scope", [("powersgd", "auto"), ("topk", "auto"),
                                        ("powersgd", "leader"), ("topk", "leader")])
def test_the_optimizer_compresses_once_per_host_by_default(hvd, layout, make, scope):
    """Sharded where hosts are of equal size, else (and with scope='leader')
    by the leaders: the reference's parameters, identical on every rank."""
    from cohort.torch import Compression
    compression = (Compression.powersgd(rank=2, start_iter=1, min_compression_rate=1.5,
                                        scope=scope)
                   if make == "powersgd" else Compression.topk(0.05, scope=scope))
    model, opt = train(hvd, compression, 3)
    mode = "host" if scope == "leader" else DEFAULT_MODE
    assert opt._reducer_mode == mode
    if make == "powersgd":
        ref = reference_powersgd(len(HOSTS), 3, 2, 1, 1.5, inputs=host_sums,
                                 prefix="allreduce.")
    elif mode == "shard":
        # One group (in backward's order: the shares follow the names).
        ref = joined(reference_topk(len(HOSTS), 3, 0.05,
                                    inputs=host_sums_in_pieces(layout, sorted(SHAPES)[::-1])))
    else:
        ref = reference_topk(len(HOSTS), 3, 0.05, inputs=host_sums)
    # PowerSGD's result depends on the sum of the gradients only (P and Q
    # are sums of products with each rank's matrix), so it equals the
    # per-rank result; which ranks hold errors shows the way.
    assert_results_close([parameters(model)], [cumulative_minus(per_job(ref))])
    if mode == "host":
        assert bool(opt._reducer.error) == layout.is_leader
    else:
        every = (None if make == "topk" else
                 ["allreduce." + n for n in SHAPES if opt._reducer.plan(torch.zeros(*SHAPES[n]))])
        assert_shares_kept_apart(hvd, layout, opt._reducer.error, every)
    assert_identical_on_every_rank(hvd, model)


def test_scope_rank_compresses_on_every_rank(hvd, layout):
    from cohort.torch import Compression
    model, opt = train(hvd, Compression.powersgd(rank=2, start_iter=1, min_compression_rate=1.5,
                                                 scope="rank"), 3)
    assert opt._reducer_mode == "rank"
    want = cumulative_minus(reference_powersgd(RANKS, 3, 2, 1, 1.5, prefix="allreduce."))
    assert_results_close([parameters(model)], [want])
    assert_identical_on_every_rank(hvd, model)


@pytest.mark.parametrize("make,scope", [("powersgd", "auto"), ("topk", "auto"),
                                        ("powersgd", "leader"), ("topk", "leader"),
                                        ("powersgd", "rank"), ("topk", "rank")])
def test_overlap_is_bit_identical_to_reducing_at_synchronize(hvd, layout, make, scope):
    """The same 3 groups started during backward or all at synchronize():
    the same parameters, bit for bit. With overlap every group is under way
    before step(); without, none is."""
    from cohort.torch import Compression

    def compression(overlap):
        if make == "powersgd":
            return Compression.powersgd(rank=2, start_iter=1, min_compression_rate=1.5,
                                        scope=scope, overlap=overlap)
        return Compression.topk(0.05, scope=scope, overlap=overlap)
    launched = {}

    def check(overlap):
        def seen(opt):
            launched.setdefault(overlap, []).append((len(opt._in_flight), len(opt._deferred)))
        return seen
    overlapped, _ = train(hvd, compression(True), 4, groups=3, check=check(True))
    at_sync, _ = train(hvd, compression(False), 4, groups=3, check=check(False))
    assert launched[True] == [(3, 0)] * 4 and launched[False] == [(0, 3)] * 4
    ours, theirs = parameters(overlapped), parameters(at_sync)
    for name in ours:
        assert torch.equal(ours[name], theirs[name]), name


@pytest.mark.parametrize("scope", ["auto", "leader"])
def test_each_ranks_state_round_trips(hvd, layout, scope):
    """4 steps, save, 3 more equals load into a fresh optimizer and 3 steps,
    on every rank (each loads its own state: sharded, its share's; by the
    leaders, a leader's or none)."""
    from cohort.torch import Compression

    def compression():
        return Compression.powersgd(rank=1, start_iter=1, min_compression_rate=1.5, scope=scope)
    model, opt = train(hvd, compression(), 4)
    saved = (copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict()), 4)
    state = saved[1]["cohort_compression"]
    mode = opt._reducer_mode
    assert mode == ("host" if scope == "leader" else DEFAULT_MODE)
    want = {"scope": mode, "ranks": RANKS, "hosts": len(HOSTS),
            "leader": mode == "shard" or layout.is_leader}
    if mode == "shard":
        want.update(share=layout.local_index, shares=layout.local_size)
        assert state["error"] and set(state["error"]) == set(state["q"])
    else:
        assert bool(state["error"]) == layout.is_leader
    assert state["layout"] == want and state["iter"] == 4
    for step in range(4, 7):
        opt.zero_grad()
        model.loss(hvd.rank(), step).backward()
        opt.step()
    continued = parameters(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a rank's own state: nothing to say
        restored, _ = train(hvd, compression(), 3, state=saved)
    for name, t in parameters(restored).items():
        assert torch.equal(t, continued[name]), name


def load_warnings(opt, state):
    """The warnings opt.load_state_dict(state) gives."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        opt.load_state_dict(state)
    return [str(w.message) for w in seen]


def test_states_whose_errors_do_not_apply_are_named(hvd, layout):
    """A non-leader's state (no errors) loaded on a leader, and a state of a
    job of another size, warn and leave the errors out; the step count and
    warm start are kept."""
    from cohort.torch import Compression, broadcast_object
    model, opt = train(hvd, Compression.powersgd(rank=1, start_iter=1, scope="leader"), 2)
    from_rank_1 = broadcast_object(opt.state_dict(), root_rank=1)  # rank 1: not a leader
    fresh = optimizer(hvd, model, Compression.powersgd(rank=1, start_iter=1, scope="leader"))
    messages = load_warnings(fresh, from_rank_1)
    if layout.is_leader:
        assert messages == [
            "Compression.powersgd(rank=1, start_iter=1, min_compression_rate=2): the saved "
            "error feedback is not used: they were saved by a rank that is not its host's "
            "leader, which keeps none (save the optimizer's state on a leader, e.g. rank 0)"]
    else:
        assert messages == []
    assert fresh._reducer.iter == 2 and fresh._reducer.error == {}

    other_job = opt.state_dict()
    other_job["cohort_compression"]["layout"] = {"scope": "rank", "ranks": 2, "hosts": 1,
                                                 "leader": True}
    messages = load_warnings(fresh, other_job)
    if layout.is_leader:
        assert messages == [
            "Compression.powersgd(rank=1, start_iter=1, min_compression_rate=2): the saved "
            "error feedback is not used: they were saved with 2 ranks (scope rank), this job "
            "has %d ranks compressed once per host on %d hosts" % (RANKS, len(HOSTS))]
        assert set(fresh._reducer.q) == set(opt._reducer.q) and fresh._reducer.q
    else:
        assert messages == [] and fresh._reducer.q == {}
    assert fresh._reducer.error == {} and fresh._reducer.iter == 2


def test_sharded_states_of_another_share_or_layout_are_named(hvd, sharded):
    """Rank 1's state (share 1) loaded on every rank: the ranks of share 0
    warn and leave its errors out; a leader-mode state warns on every rank,
    naming both layouts. The step count and warm start are kept."""
    from cohort.torch import Compression, broadcast_object
    model, opt = train(hvd, Compression.powersgd(rank=1, start_iter=1), 2)
    from_rank_1 = broadcast_object(opt.state_dict(), root_rank=1)
    fresh = optimizer(hvd, model, Compression.powersgd(rank=1, start_iter=1))
    messages = load_warnings(fresh, from_rank_1)
    if sharded.local_index != 1:
        assert messages == [
            "Compression.powersgd(rank=1, start_iter=1, min_compression_rate=2): the saved "
            "error feedback is not used: they were saved by a rank that compresses share 1 "
            "of 2 (local rank 1), this rank compresses share %d (save and load each rank's "
            "own state)" % sharded.local_index]
        assert fresh._reducer.error == {}
    else:
        assert messages == [] and set(fresh._reducer.error) == set(opt._reducer.error)
    assert fresh._reducer.iter == 2 and set(fresh._reducer.q) == set(from_rank_1[
        "cohort_compression"]["q"])

    leaders = opt.state_dict()
    leaders["cohort_compression"]["layout"] = {"scope": "host", "ranks": RANKS,
                                               "hosts": len(HOSTS), "leader": True}
    assert load_warnings(fresh, leaders) == [
        "Compression.powersgd(rank=1, start_iter=1, min_compression_rate=2): the saved "
        "error feedback is not used: they were saved with %d ranks compressed once per host "
        "on %d hosts, this job has %d ranks compressed once per host on %d hosts, sharded "
        "over %d ranks per host" % (RANKS, len(HOSTS), RANKS, len(HOSTS), len(HOSTS[0]))]
    assert fresh._reducer.error == {} and set(fresh._reducer.q) == set(opt._reducer.q)


def test_scope_is_checked(hvd):
    from cohort.torch import Compression
    with pytest.raises(ValueError, match="Compression.topk: scope must be 'auto', 'host', "
                                         "'leader' or 'rank', got 'hosts'"):
        Compression.topk(0.1, scope="hosts")


def test_the_mode_is_said_once_at_info_level(hvd, layout, caplog):
    """Rank 0 logs which way the optimizer compresses, and why."""
    from cohort.torch import Compression
    with caplog.at_level(logging.INFO, logger="cohort.torch"):
        opt = optimizer(hvd, Linear(), Compression.topk(0.05))
    said = [r.getMessage() for r in caplog.records if r.name == "cohort.torch"]
    if hvd.rank() != 0:
        assert said == []
    elif SHARDED:
        assert said == ["Compression.topk(0.05): compressing once per host, sharded: each of "
                        "the 2 ranks of a host compresses a share of the gradients with its "
                        "counterparts on the 2 hosts"]
    else:
        assert said == ["Compression.topk(0.05): compressing once per host by each host's "
                        "leader (hosts have different numbers of ranks (2, 1), sharding needs "
                        "the same number on every host)"]
    assert opt._reducer_mode == DEFAULT_MODE


@pytest.mark.parametrize("scope", ["auto", "leader"])
def test_closing_optimizers_removes_their_process_sets(hvd, layout, scope):
    """20 once-per-host optimizers made and closed (after a step each) leave
    the job's process sets as they were; a closed optimizer cannot step."""
    from cohort import _cohort
    from cohort.torch import Compression
    before = _cohort.process_set_ids()
    model = Linear()
    for i in range(20):
        opt = optimizer(hvd, model, Compression.topk(0.05, scope=scope), keep_open=True)
        made = [ps.process_set_id for ps in opt._layout.process_sets()]
        # One per host of several ranks, then one per local index or the leaders'.
        assert len(made) == sum(len(ranks) > 1 for ranks in HOSTS) + (
            len(HOSTS[0]) if opt._reducer_mode == "shard" else 1)
        assert set(made) <= set(_cohort.process_set_ids())
        if i == 0:
            opt.zero_grad()
            model.loss(hvd.rank(), 0).backward()
            opt.step()
        opt.close()
        assert _cohort.process_set_ids() == before
        opt.close()  # again: nothing
    opt.zero_grad()
    with pytest.raises(ValueError, match=r"DistributedOptimizer: Compression.topk\(0.05\): it "
                       r"was closed \(close\(\) removed its process sets\); make a new optimizer"):
        model.loss(hvd.rank(), 0).backward()


@pytest.mark.parametrize("scope", ["auto", "leader"])
def test_no_rank_leaves_a_step_before_every_host_has_its_result(hvd, layout, scope):
    """A rank may shut down right after its last step (Horovod's shutdown
    ends every rank's engine): its step must not return while another host
    still gathers or broadcasts its result. The leader of the last host of
    several ranks (rank 2 of 0,0,1,1) here starts that late; the other
    host's ranks shut down as soon as their steps returned; every rank's
    step still succeeds. Then close() sends nothing: the sets ended with
    the runtime. Last in this file: it ends the job (and starts a new one
    for the next run and the fixture's shutdown)."""
    import time
    from cohort import _cohort
    from cohort.torch import Compression
    model = Linear()
    opt = optimizer(hvd, model, Compression.topk(0.05, scope=scope), keep_open=True)
    if hvd.rank() == [ranks for ranks in HOSTS if len(ranks) > 1][-1][0]:
        for method in ("broadcast_into", "allgather_into"):
            def late(*args, on_time=getattr(opt._layout.host_comm, method)):
                time.sleep(1.0)  # not a wait for anything: a window rank 0 must not use
                return on_time(*args)
            setattr(opt._layout.host_comm, method, late)
    opt.zero_grad()
    model.loss(hvd.rank(), 0).backward()
    opt.step()  # raises on ranks 2 and 3 if rank 0 ended the job too early
    hvd.shutdown()
    hvd.init()
    opt.zero_grad()
    with pytest.raises(ValueError, match="its process sets ended with the runtime they were "
                                         "made in"):
        model.loss(hvd.rank(), 1).backward()
    opt.close()  # would fail (no such set) or hang if it tried to remove them
    assert _cohort.process_set_ids() == [0]
