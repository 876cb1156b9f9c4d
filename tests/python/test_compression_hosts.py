"""Compression.powersgd and Compression.topk once per host (host_reduction.py)
and overlapped with backward, on emulated hosts: 4 ranks as 2 hosts x 2
(COHORT_TEST_HOSTS=0,0,1,1) and 3 ranks as hosts of 2 and 1 (0,0,1), see
tests/python/CMakeLists.txt. The results against a plain torch reference of
"sum per host, then PowerSGD/top-k across the host sums, / ranks" (/ 4
for 2 x 2), through the reducer and through
DistributedOptimizer; every rank's parameters identical; overlap
bit-identical to reducing at synchronize(); the state saved by a leader
round-trips, other states are named and their errors not used."""
import copy
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


@pytest.fixture(scope="module")
def layout(hvd):
    if len(HOSTS) < 2 or hvd.size() != RANKS:
        pytest.skip("needs several emulated hosts (COHORT_TEST_HOSTS=0,0,1,1 with 4 ranks)")
    from cohort.torch.host_reduction import HostLayout
    return HostLayout.of_job().connect()


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
    assert layout.mode("auto") == "host" and layout.mode("host") == "host"
    assert layout.mode("rank") == "rank"


def reduce_once_per_host(hvd, layout, reducer, steps):
    from cohort.torch.host_reduction import once_per_host
    from cohort.torch.reducer_comm import drive
    out = []
    for step in range(steps):
        grads = gradients(hvd.rank(), step)
        names = sorted(grads)
        drive(once_per_host(reducer, layout, names, [grads[n] for n in names], ""))
        reducer.end_step()
        out.append(grads)
    return out


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


def train(hvd, compression, steps, groups=None, state=None, check=None):
    model = Linear()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                   named_parameters=model.named_parameters(),
                                   compression=compression, groups=groups)
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


@pytest.mark.parametrize("make", ["powersgd", "topk"])
def test_the_optimizer_compresses_once_per_host_by_default(hvd, layout, make):
    from cohort.torch import Compression
    compression = (Compression.powersgd(rank=2, start_iter=1, min_compression_rate=1.5)
                   if make == "powersgd" else Compression.topk(0.05))
    model, opt = train(hvd, compression, 3)
    assert opt._reducer_mode == "host"
    if make == "powersgd":
        ref = reference_powersgd(len(HOSTS), 3, 2, 1, 1.5, inputs=host_sums,
                                 prefix="allreduce.")
    else:
        ref = reference_topk(len(HOSTS), 3, 0.05, inputs=host_sums)
    # PowerSGD's result depends on the sum of the gradients only (P and Q
    # are sums of products with each rank's matrix), so it equals the
    # per-rank result; that only the leaders hold errors shows the way.
    assert_results_close([parameters(model)], [cumulative_minus(per_job(ref))])
    assert bool(opt._reducer.error) == layout.is_leader
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


def test_a_leaders_state_round_trips(hvd, layout):
    """4 steps, save, 3 more equals load into a fresh optimizer and 3 steps,
    on every rank (each loads its own state)."""
    from cohort.torch import Compression

    def compression():
        return Compression.powersgd(rank=1, start_iter=1, min_compression_rate=1.5)
    model, opt = train(hvd, compression(), 4)
    saved = (copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict()), 4)
    state = saved[1]["cohort_compression"]
    assert state["layout"] == {"scope": "host", "ranks": RANKS, "hosts": len(HOSTS),
                               "leader": layout.is_leader}
    assert bool(state["error"]) == layout.is_leader and state["iter"] == 4
    for step in range(4, 7):
        opt.zero_grad()
        model.loss(hvd.rank(), step).backward()
        opt.step()
    continued = parameters(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a leader's own state: nothing to say
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
    model, opt = train(hvd, Compression.powersgd(rank=1, start_iter=1), 2)
    from_rank_1 = broadcast_object(opt.state_dict(), root_rank=1)  # rank 1: not a leader
    fresh = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                     named_parameters=model.named_parameters(),
                                     compression=Compression.powersgd(rank=1, start_iter=1))
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


def test_scope_is_checked(hvd):
    from cohort.torch import Compression
    with pytest.raises(ValueError, match="Compression.topk: scope must be 'auto', 'host' or "
                                         "'rank', got 'hosts'"):
        Compression.topk(0.1, scope="hosts")


def test_no_rank_leaves_a_step_before_every_host_has_its_result(hvd, layout):
    """A rank may shut down right after its last step (Horovod's shutdown
    ends every rank's engine): its step must not return while another host
    still broadcasts its result. The leader of the last host of several
    ranks (rank 2 of 0,0,1,1) here starts its broadcast late; the other
    host's ranks shut down as soon as their steps returned; every rank's
    step still succeeds. Last in this file: it ends the job (and starts a
    new one for the fixture's shutdown)."""
    import time
    from cohort.torch import Compression
    model = Linear()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                   named_parameters=model.named_parameters(),
                                   compression=Compression.topk(0.05))
    if hvd.rank() == [ranks for ranks in HOSTS if len(ranks) > 1][-1][0]:
        broadcast_into = opt._layout.host_comm.broadcast_into

        def late(*args):
            time.sleep(1.0)  # not a wait for anything: a window rank 0 must not use
            return broadcast_into(*args)
        opt._layout.host_comm.broadcast_into = late
    opt.zero_grad()
    model.loss(hvd.rank(), 0).backward()
    opt.step()  # raises on ranks 2 and 3 if rank 0 ended the job too early
    hvd.shutdown()
    hvd.init()
