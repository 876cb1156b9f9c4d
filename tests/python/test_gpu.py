"""CUDA tensors through cohort.torch (issue 27, docs/gpu.md). Every test
skips without CUDA (this CI's torch is CPU-only); tools/device-check.sh runs
the file on the GPU machine with 2 and 3 ranks sharing one GPU (IPC and
staged transports). Each collective on CUDA tensors must equal the same
collective on CPU tensors exactly (inputs are small integers, so every
reduction order gives the same value in every dtype), results must be
ordered on torch's current stream, and training must match the CPU run."""
import pytest
import torch


pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="needs a CUDA device (torch.cuda.is_available() is False)")

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.bool]


def _device(hvd):
    # Horovod's idiom: one device per local rank (ranks share it when there are fewer GPUs).
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    return torch.device("cuda", torch.cuda.current_device())


def _inputs(hvd, dtype, n=257, op=None):
    r = hvd.rank()
    if dtype == torch.bool:
        return torch.tensor([(r * 3 + i) % 3 == 0 for i in range(n)])
    if op is not None and op == hvd.Product:
        vals = [[1, 2, 1, -1][(r * 5 + i * 3) % 4] for i in range(n)]
        if dtype == torch.uint8:
            vals = [abs(v) for v in vals]
        return torch.tensor(vals).to(dtype)
    vals = [(r * 31 + i * 7) % 11 - (0 if dtype == torch.uint8 else 5) for i in range(n)]
    return torch.tensor(vals).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allreduce_of_cuda_tensors_equals_cpu(hvd, dtype):
    dev = _device(hvd)
    for op in (hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product):
        x = _inputs(hvd, dtype, op=op)
        name = "gpu.ar.%s.%d" % (dtype, op)
        want = hvd.allreduce(x, op=op, name=name + ".cpu")
        got = hvd.allreduce(x.to(dev), op=op, name=name + ".gpu")
        assert got.device == dev
        assert torch.equal(got.cpu(), want), (op, got, want)
        # In place, with scale factors (sum and average only).
        if op in (hvd.Sum, hvd.Average) and dtype != torch.bool:
            want = hvd.allreduce(x, op=op, prescale_factor=0.5, postscale_factor=2.0,
                                 name=name + ".cpu.scaled")
            y = x.to(dev)
            hvd.allreduce_(y, op=op, prescale_factor=0.5, postscale_factor=2.0,
                           name=name + ".gpu.scaled")
            assert torch.equal(y.cpu(), want)


def test_grouped_allreduce_and_async_forms(hvd):
    dev = _device(hvd)
    xs = [_inputs(hvd, torch.float32, n) for n in (1, 3, 1000, 17)]
    want = hvd.grouped_allreduce(xs, op=hvd.Sum, name="gpu.grouped.cpu")
    got = hvd.grouped_allreduce([x.to(dev) for x in xs], op=hvd.Sum, name="gpu.grouped.gpu")
    for g, w in zip(got, want):
        assert torch.equal(g.cpu(), w)
    ys = [x.to(dev) for x in xs]
    handles = [hvd.allreduce_async_(y, op=hvd.Sum, name="gpu.async.%d" % i)
               for i, y in enumerate(ys)]
    for h in handles:
        hvd.synchronize(h)
    for y, w in zip(ys, want):
        assert torch.equal(y.cpu(), w)


def test_the_engine_waits_for_the_callers_stream(hvd):
    """The gradient is produced by a long kernel on a side stream; the
    allreduce is submitted right away and must see its final values, and
    its result must be ready on that stream after synchronize."""
    dev = _device(hvd)
    side = torch.cuda.Stream(dev)
    with torch.cuda.stream(side):
        big = torch.ones(4096, 4096, device=dev)
        for _ in range(20):
            big = big @ torch.eye(4096, device=dev)  # slow, value-preserving
        x = big[0, :1024] * (hvd.rank() + 1)
        h = hvd.allreduce_async(x, op=hvd.Sum, name="gpu.order")
        out = hvd.synchronize(h)
        total = out.sum()  # queued on `side` after the join
    side.synchronize()
    n = hvd.size()
    assert float(total) == 1024 * n * (n + 1) / 2


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16, torch.bool],
                         ids=str)
def test_broadcast_allgather_reducescatter_alltoall(hvd, dtype):
    dev = _device(hvd)
    n, r = hvd.size(), hvd.rank()
    x = _inputs(hvd, dtype, 12)
    for root in range(n):
        want = hvd.broadcast(x, root, name="gpu.bc.%s.%d.cpu" % (dtype, root))
        got = hvd.broadcast(x.to(dev), root, name="gpu.bc.%s.%d.gpu" % (dtype, root))
        assert torch.equal(got.cpu(), want)
    rows = _inputs(hvd, dtype, 3 * (r + 1)).reshape(r + 1, 3)  # uneven rows
    want = hvd.allgather(rows, name="gpu.ag.%s.cpu" % dtype)
    got = hvd.allgather(rows.to(dev), name="gpu.ag.%s.gpu" % dtype)
    assert got.device == dev and torch.equal(got.cpu(), want)
    if dtype != torch.bool:
        m = _inputs(hvd, dtype, 2 * (2 * n + 1)).reshape(2 * n + 1, 2)
        want = hvd.reducescatter(m, op=hvd.Sum, name="gpu.rs.%s.cpu" % dtype)
        got = hvd.reducescatter(m.to(dev), op=hvd.Sum, name="gpu.rs.%s.gpu" % dtype)
        assert torch.equal(got.cpu(), want)
    a = _inputs(hvd, dtype, 2 * n)
    want = hvd.alltoall(a, name="gpu.a2a.%s.cpu" % dtype)
    got = hvd.alltoall(a.to(dev), name="gpu.a2a.%s.gpu" % dtype)
    assert got.device == dev and torch.equal(got.cpu(), want)


def test_distributed_optimizer_on_cuda_equals_cpu_training(hvd):
    dev = _device(hvd)

    def train(device):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                    torch.nn.Linear(16, 1)).to(device)
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                       named_parameters=[(("%s." % device.type) + k, v)
                                                         for k, v in model.named_parameters()])
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        g = torch.Generator().manual_seed(hvd.rank())
        for _ in range(5):
            x = torch.randn(4, 8, generator=g).to(device)
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
        return [p.detach().cpu() for p in model.parameters()]

    cpu = train(torch.device("cpu"))
    gpu = train(dev)
    for c, g in zip(cpu, gpu):
        assert torch.allclose(c, g, rtol=1e-5, atol=1e-6)


def test_resnet18_with_distributed_optimizer_on_cuda_equals_one_process(hvd):
    # Issue 27: each rank trains on its share of a batch; averaged gradients
    # must give the single-process full-batch training. GroupNorm instead of
    # BatchNorm, so a rank's share does not change its normalization.
    torchvision = pytest.importorskip("torchvision")
    dev = _device(hvd)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    n, r, per = hvd.size(), hvd.rank(), 4
    g = torch.Generator().manual_seed(1)
    x = torch.randn(per * n, 3, 32, 32, generator=g).to(dev)
    y = torch.randint(0, 10, (per * n,), generator=g).to(dev)

    def model():
        torch.manual_seed(0)
        return torchvision.models.resnet18(
            num_classes=10, norm_layer=lambda c: torch.nn.GroupNorm(32, c)).to(dev)

    def train(net, opt, xs, ys):
        for _ in range(3):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(xs), ys).backward()
            opt.step()
        return [p.detach().cpu() for p in net.parameters()]

    net = model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9),
                                   named_parameters=net.named_parameters(), op=hvd.Average)
    hvd.broadcast_parameters(net.state_dict(), root_rank=0)
    shared = train(net, opt, x[r * per:(r + 1) * per], y[r * per:(r + 1) * per])
    one = model()
    alone = train(one, torch.optim.SGD(one.parameters(), lr=0.05, momentum=0.9), x, y)
    worst = max(((a - b).abs().max() / (b.abs().max() + 1e-12)).item()
                for a, b in zip(shared, alone))
    assert worst < 1e-4, "largest relative difference %.3g" % worst


def test_device_feed_copies_batches_ahead_ready_on_the_current_stream():
    """The loader's device path (cohort.data.DataLoader(device="cuda")) over
    plain numpy batches: the minimal build on the GPU machine has no dataset
    module, so the feed is checked on its own."""
    import numpy as np
    from cohort.torch.device_feed import DeviceFeed
    batches = [{"x": np.full((64, 1024), i, np.float32)} for i in range(5)]
    it = iter([(b, i) for i, b in enumerate(batches)])
    feed = DeviceFeed("cuda")
    got = []
    while True:
        taken = feed.next(lambda: next(it, None))
        if taken is None:
            break
        tensors, meta = taken
        assert tensors["x"].is_cuda
        got.append((meta, float((tensors["x"] * 2).sum().item())))  # on the current stream
    assert got == [(i, 2.0 * i * 64 * 1024) for i in range(5)]
    assert feed.next(lambda: next(it, None)) is None  # the iterator is spent


def test_queries(hvd):
    assert hvd.cuda_built()
    from cohort import _cohort
    assert "driver: " in _cohort.gpu_report()
