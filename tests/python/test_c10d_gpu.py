"""The "cohort" torch.distributed backend with CUDA tensors (torch 2.1 and
newer; docs/gpu.md): allreduce and broadcast equal the CPU results exactly,
other collectives name what to do instead, and DDP on CUDA gives the same
model as DDP on gloo with CUDA tensors (float tolerance). Skipped without
CUDA; tools/device-check.sh runs it with 2 ranks sharing one GPU."""
import datetime

import pytest
import torch
from torch import nn

from conftest import under_launcher

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="needs a CUDA device (torch.cuda.is_available() is False)")


@pytest.fixture(scope="session")
def dist(request):
    if not under_launcher():
        pytest.skip("needs `cohort run -np N` (see tests/python/CMakeLists.txt)")
    import torch.distributed as dist
    import cohort
    import cohort.torch.distributed  # noqa: F401  registers the backend
    dist.init_process_group("cohort", timeout=datetime.timedelta(seconds=60))
    torch.cuda.set_device(dist.get_rank() % torch.cuda.device_count())
    dist.gloo = dist.new_group(backend="gloo")
    yield dist
    if request.session.testsfailed == 0:
        dist.destroy_process_group()
        cohort.shutdown()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64],
                         ids=str)
def test_allreduce_and_broadcast_of_cuda_tensors_equal_cpu(dist, dtype):
    r = dist.get_rank()
    x = (torch.arange(1000) % 7 - 3 + r).to(dtype)
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN):
        cpu, gpu = x.clone(), x.cuda()
        dist.all_reduce(cpu, op=op)
        dist.all_reduce(gpu, op=op)
        assert torch.equal(gpu.cpu(), cpu)
    cpu, gpu = x.clone(), x.cuda()
    dist.broadcast(cpu, src=1)
    work = dist.broadcast(gpu, src=1, async_op=True)
    work.wait()
    assert torch.equal(gpu.cpu(), cpu)


def test_other_collectives_of_cuda_tensors_say_what_to_do(dist):
    x = torch.ones(4, device="cuda")
    out = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    with pytest.raises(RuntimeError, match="CUDA tensors go through allreduce and broadcast only"):
        dist.all_gather(out, x)


def test_ddp_on_cuda_equals_ddp_on_gloo(dist):
    from torch.nn.parallel import DistributedDataParallel as DDP

    def train(group):
        torch.manual_seed(0)
        model = DDP(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4)).cuda(),
                    process_group=group, bucket_cap_mb=0.001)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        gen = torch.Generator().manual_seed(100 + dist.get_rank())
        for _ in range(4):
            x, y = torch.randn(16, 8, generator=gen).cuda(), torch.randn(16, 4, generator=gen).cuda()
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        return [p.detach().cpu() for p in model.parameters()]

    for a, b in zip(train(None), train(dist.gloo)):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6)
