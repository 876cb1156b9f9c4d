"""DistributedDataParallel and ZeroRedundancyOptimizer on the "cohort"
backend give the same model as on gloo (float tolerance), with bucketing,
no_sync, find_unused_parameters and the comm hooks (fp16, PowerSGD;
torch 1.13's bf16_compress_hook refuses to run without CUDA), and cohort's
own compression hooks (cohort.torch.comm_hooks: PowerSGD, top-k). Runs under
`cohort run -np 2` (tests/python/CMakeLists.txt)."""
import datetime

import pytest
import torch
from torch import nn

from conftest import under_launcher

STEPS = 4


@pytest.fixture(scope="session")
def dist(request):
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


class Net(nn.Module):
    """Two layers, plus (with_branch) one that only odd steps use (for
    find_unused_parameters)."""

    def __init__(self, with_branch):
        super().__init__()
        self.a = nn.Linear(8, 32)
        self.b = nn.Linear(32, 4)
        self.unused = nn.Linear(32, 4) if with_branch else None

    def forward(self, x, use_branch=False):
        h = torch.relu(self.a(x))
        return self.b(h) + (self.unused(h) if use_branch else 0)


def batches(rank):
    gen = torch.Generator().manual_seed(100 + rank)
    return [(torch.randn(16, 8, generator=gen), torch.randn(16, 4, generator=gen))
            for _ in range(STEPS)]


def train(dist, group, hook=None, no_sync_every=0, find_unused=False, zero=False):
    """Trains a fresh Net (same init on every call) for STEPS steps; returns
    its parameters."""
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)
    model = DDP(Net(find_unused), process_group=group, bucket_cap_mb=0.001,  # several buckets
                find_unused_parameters=find_unused)
    if hook is not None:
        state, fn = hook(group, model.module)
        model.register_comm_hook(state, fn)
    if zero:
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD,
                                      process_group=group, lr=0.1)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, y) in enumerate(batches(dist.get_rank())):
        use_branch = find_unused and step % 2 == 1
        if no_sync_every and step % no_sync_every == 0:
            with model.no_sync():
                nn.functional.mse_loss(model(x, use_branch), y).backward()
            continue
        nn.functional.mse_loss(model(x, use_branch), y).backward()
        opt.step()
        opt.zero_grad()
    return [p.detach().clone() for p in model.module.parameters()]


def assert_close_params(ours, ref, atol=1e-6, rtol=1e-5):
    for a, b in zip(ours, ref):
        torch.testing.assert_close(a, b, atol=atol, rtol=rtol)


def test_ddp_matches_gloo(dist):
    assert_close_params(train(dist, None), train(dist, dist.gloo))


def test_ddp_no_sync_matches_gloo(dist):
    assert_close_params(train(dist, None, no_sync_every=2), train(dist, dist.gloo, no_sync_every=2))


def test_ddp_find_unused_parameters_matches_gloo(dist):
    assert_close_params(train(dist, None, find_unused=True),
                        train(dist, dist.gloo, find_unused=True))


def fp16_hook(group, module):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    return group, default_hooks.fp16_compress_hook


def powersgd_hook(group, module):
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd
    state = powersgd.PowerSGDState(process_group=group, matrix_approximation_rank=1,
                                   start_powerSGD_iter=2, min_compression_rate=0.5)
    return state, powersgd.powerSGD_hook


def test_ddp_fp16_compress_hook_matches_gloo(dist):
    assert_close_params(train(dist, None, hook=fp16_hook), train(dist, dist.gloo, hook=fp16_hook))


def test_ddp_powersgd_hook_matches_gloo(dist):
    assert_close_params(train(dist, None, hook=powersgd_hook),
                        train(dist, dist.gloo, hook=powersgd_hook), atol=1e-5, rtol=1e-4)


def test_zero_redundancy_optimizer_matches_gloo(dist):
    assert_close_params(train(dist, None, zero=True), train(dist, dist.gloo, zero=True))


def train_sparse_embedding(dist, group):
    """DDP over an nn.Embedding(sparse=True): its gradients are sparse COO
    tensors, which the backend all-reduces as such."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Embedding(20, 4, sparse=True)), process_group=group)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    gen = torch.Generator().manual_seed(7 + dist.get_rank())
    for _ in range(STEPS):
        idx = torch.randint(0, 20, (6,), generator=gen)  # different rows on every rank
        model(idx).pow(2).sum().backward()
        assert model.module[0].weight.grad.is_sparse
        opt.step()
        opt.zero_grad()
    return [p.detach().clone() for p in model.module.parameters()]


def test_ddp_sparse_embedding_matches_gloo(dist):
    assert_close_params(train_sparse_embedding(dist, None), train_sparse_embedding(dist, dist.gloo))


def cohort_compression_hook(make):
    def hook(group, module):
        from cohort.torch import comm_hooks
        reducer = (comm_hooks.Compression.powersgd(rank=1, start_iter=1, min_compression_rate=0.5)
                   if make == "powersgd" else comm_hooks.Compression.topk(0.1))
        state = comm_hooks.CompressionState(reducer, module.named_parameters(), group)
        hook.state = state
        return state, comm_hooks.compression_hook
    return hook


@pytest.mark.parametrize("make", ["powersgd", "topk"])
def test_cohort_compression_hooks_match_gloo(dist, make):
    """cohort's PowerSGD and top-k as DDP comm hooks: the same model over the
    cohort backend as over gloo, different from uncompressed training, and
    the hook's state (errors, warm start, steps) kept per parameter."""
    hook = cohort_compression_hook(make)
    ours = train(dist, None, hook=hook)
    state = hook.state.state_dict()
    assert state["iter"] == STEPS
    assert set(state["error"]) == {"a.weight", "a.bias", "b.weight", "b.bias"} or make == "powersgd"
    if make == "powersgd":
        assert set(state["q"]) == {"a.weight", "b.weight"}
    assert_close_params(ours, train(dist, dist.gloo, hook=cohort_compression_hook(make)),
                        atol=1e-5, rtol=1e-4)
    plain = train(dist, None)
    assert any(not torch.allclose(a, b, atol=1e-4) for a, b in zip(ours, plain))
