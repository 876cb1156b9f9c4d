"""cohort.torch.comm_hooks once per host: DDP on the "cohort" backend with
compression_hook and scope="host" (sharded where hosts are of equal size)
or "leader", on emulated hosts (4 ranks as 0,0,1,1 and 3 as 0,0,1, see
tests/python/CMakeLists.txt). PowerSGD once per host gives the per-rank
hook's model (its result depends on the sum of the gradients only); top-k
the model DistributedOptimizer gives once per host with the same groups
(whose reduction test_compression_hosts.py checks against a reference);
errors kept where that mode keeps them; a gloo group refused; close()
removes the process sets."""
import datetime
import os
import warnings

import pytest
import torch
from torch import nn

from conftest import under_launcher

STEPS = 4
_HOST_OF = [int(h) for h in os.environ.get("COHORT_TEST_HOSTS", "0").split(",")]
HOSTS = [[r for r, h in enumerate(_HOST_OF) if h == host] for host in sorted(set(_HOST_OF))]
SHARDED = len({len(ranks) for ranks in HOSTS}) == 1


@pytest.fixture(scope="module")
def dist(request):
    if not under_launcher():
        pytest.skip("needs `cohort run -np N` (see tests/python/CMakeLists.txt)")
    import torch.distributed as dist
    import cohort
    import cohort.torch.distributed  # noqa: F401  registers the backend
    if len(HOSTS) < 2 or int(os.environ["COHORT_SIZE"]) != len(_HOST_OF):
        pytest.skip("needs several emulated hosts (COHORT_TEST_HOSTS=0,0,1,1 with 4 ranks)")
    dist.init_process_group("cohort", timeout=datetime.timedelta(seconds=60))
    yield dist
    if request.session.testsfailed == 0:
        dist.destroy_process_group()
        cohort.shutdown()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 32)
        self.b = nn.Linear(32, 4)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def batches(rank):
    gen = torch.Generator().manual_seed(100 + rank)
    return [(torch.randn(16, 8, generator=gen), torch.randn(16, 4, generator=gen))
            for _ in range(STEPS)]


def powersgd(scope):
    from cohort.torch import comm_hooks
    return comm_hooks.Compression.powersgd(rank=1, start_iter=1, min_compression_rate=0.5,
                                           scope=scope)


def topk(scope):
    from cohort.torch import comm_hooks
    return comm_hooks.Compression.topk(0.1, scope=scope)


def train_ddp(dist, reducer, state=None):
    """A fresh Net (the same on every call) trained STEPS steps by DDP with
    compression_hook(reducer) (or `state`, a CompressionState): its
    parameters, the hook's state and the names of each bucket the hook
    reduced in the first step."""
    from cohort.torch import comm_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)
    model = DDP(Net())
    if state is None:
        state = comm_hooks.CompressionState(reducer, model.module.named_parameters())
    else:
        state.names = {id(p): name for name, p in model.module.named_parameters()}
    buckets, first_step = [], [True]

    def hook(state, bucket):
        if first_step[0]:
            buckets.append([state.names[id(p)] for p in comm_hooks._bucket_parameters(bucket)])
            first_step[0] = not bucket.is_last()
        return comm_hooks.compression_hook(state, bucket)
    model.register_comm_hook(state, hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in batches(dist.get_rank()):
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        opt.zero_grad()
    return [p.detach().clone() for p in model.module.parameters()], state, buckets


def mode_of(scope):
    return "shard" if SHARDED and scope == "host" else "host"


def layout_ranks(state):
    """(local index, is the host's leader) of this rank."""
    return state.layout.local_index, state.layout.is_leader


@pytest.mark.parametrize("scope", ["host", "leader"])
def test_powersgd_hook_once_per_host_trains_as_per_rank(dist, scope):
    from cohort.torch import allgather_object
    ours, state, _ = train_ddp(dist, powersgd(scope))
    assert state.mode == mode_of(scope)
    per_rank, _, _ = train_ddp(dist, powersgd("rank"))
    for a, b in zip(ours, per_rank):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    # Errors where the mode keeps them: sharded, each matrix on one local
    # index (the same on every host); else on the leaders, all of them.
    keys = sorted(state.reducer.error)
    assert state.reducer.iter == STEPS
    saved = state.state_dict()
    assert saved["layout"] == state.layout.describe(state.mode) and saved["iter"] == STEPS
    if state.mode == "shard":
        assert saved["layout"]["share"] == state.layout.local_index
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # its own state: nothing to say
        state.load_state_dict(saved)
    assert sorted(state.reducer.error) == keys
    everyone = allgather_object((layout_ranks(state), keys))
    if state.mode == "shard":
        by_share = {}
        for (share, _), theirs in everyone:
            assert by_share.setdefault(share, theirs) == theirs
        assert sorted(k for theirs in by_share.values() for k in theirs) == ["a.weight",
                                                                              "b.weight"]
    else:
        for (_, leader), theirs in everyone:
            assert theirs == (["a.weight", "b.weight"] if leader else [])
    state.close()


@pytest.mark.parametrize("scope", ["host", "leader"])
def test_topk_hook_once_per_host_trains_as_the_optimizer(dist, scope):
    import cohort.torch as hvd
    ours, state, buckets = train_ddp(dist, topk(scope))
    state.close()
    torch.manual_seed(0)
    model = Net()
    params = dict(model.named_parameters())
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters(),
        compression=topk(scope), groups=[[params[n] for n in names] for names in buckets])
    assert opt._reducer_mode == mode_of(scope)
    for x, y in batches(dist.get_rank()):
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        opt.zero_grad()
    opt.close()
    for a, b in zip(ours, model.parameters()):
        torch.testing.assert_close(a, b.detach(), atol=1e-6, rtol=1e-5)
    # Not what the per-rank hook gives (top-k of host sums differs).
    per_rank, _, _ = train_ddp(dist, topk("rank"))
    assert any(not torch.allclose(a, b, atol=1e-4) for a, b in zip(ours, per_rank))


def test_a_gloo_group_is_refused_and_close_removes_the_sets(dist):
    from cohort import _cohort
    from cohort.torch import comm_hooks
    gloo = dist.new_group(backend="gloo")
    with pytest.raises(ValueError, match=r"CompressionState: Compression.topk\(0.1\) with "
                       r"scope='host' needs the 'cohort' backend's default group \(the job's "
                       r"hosts and process sets are cohort's\); got a gloo group of %d ranks"
                       % len(_HOST_OF)):
        comm_hooks.CompressionState(topk("host"), Net().named_parameters(), gloo)
    before = _cohort.process_set_ids()
    state = comm_hooks.CompressionState(topk("host"), Net().named_parameters())
    assert len(_cohort.process_set_ids()) > len(before)
    state.close()
    assert _cohort.process_set_ids() == before
    # DDP passes the hook's error on as a RuntimeError with its text.
    with pytest.raises(RuntimeError, match=r"compression_hook: Compression.topk\(0.1\): it was "
                       r"closed \(close\(\) removed its process sets\); make a new "
                       r"CompressionState"):
        train_ddp(dist, topk("host"), state)
