"""Gradients through every collective, checked numerically: the loss is the
sum over ranks of (output_r * w_r).sum() with fixed random weights w_r, and
each rank's autograd gradient must equal the central difference of that
global loss with respect to its own input, times the factor by which
Horovod's definition differs from it (allgather and broadcast average the
output's gradient over ranks where the global loss sums it: 1/size;
reducescatter multiplies Sum by size and does not divide Average: size).
Run under `cohort run -np 3`."""
import pytest
import torch

EPS = 1e-6


def check_gradient(hvd, fn, shape_of_rank, seed, scale=1.0):
    n, me = hvd.size(), hvd.rank()
    gen = torch.Generator().manual_seed(seed)
    # Values in [0.5, 1.5), distinct with probability 1 (no ties for Min/Max).
    xs = [torch.rand(shape_of_rank(r), generator=gen, dtype=torch.float64) + 0.5
          for r in range(n)]
    x = xs[me].clone().requires_grad_()
    out = fn(x)
    w = torch.rand(out.shape, generator=torch.Generator().manual_seed(1000 * seed + me),
                   dtype=torch.float64)
    (out * w).sum().backward()

    def global_loss(q, j, delta):
        inp = xs[me].clone()
        if q == me:
            inp.view(-1)[j] += delta
        with torch.no_grad():
            local = (fn(inp) * w).sum()
        return hvd.allreduce(local, op=hvd.Sum).item()

    numeric = torch.zeros_like(xs[me])
    for q in range(n):
        for j in range(xs[q].numel()):
            d = (global_loss(q, j, EPS) - global_loss(q, j, -EPS)) / (2 * EPS)
            if q == me:
                numeric.view(-1)[j] = d
    assert x.grad is not None
    numeric *= scale
    assert torch.allclose(x.grad, numeric, atol=1e-6, rtol=1e-5), (x.grad, numeric)


@pytest.mark.parametrize("op_name", ["Sum", "Average", "Min", "Max", "Product"])
def test_allreduce_gradient(hvd, op_name):
    op = getattr(hvd, op_name)
    check_gradient(hvd, lambda x: hvd.allreduce(x, op=op), lambda r: (2, 2), seed=1)


def test_allreduce_gradient_with_scale_factors(hvd):
    check_gradient(hvd, lambda x: hvd.allreduce(x, op=hvd.Average, prescale_factor=3.0,
                                                postscale_factor=0.25),
                   lambda r: (3,), seed=2)


def test_grouped_allreduce_gradient(hvd):
    def fn(x):
        a, b = hvd.grouped_allreduce([x, 2 * x], op=hvd.Sum)
        return a * b
    check_gradient(hvd, fn, lambda r: (3,), seed=3)


def test_allgather_gradient(hvd):
    check_gradient(hvd, lambda x: hvd.allgather(x), lambda r: (r + 1, 2), seed=4,
                   scale=1.0 / hvd.size())


def test_broadcast_gradient(hvd):
    root = hvd.size() - 1
    check_gradient(hvd, lambda x: hvd.broadcast(x, root), lambda r: (2, 2), seed=5,
                   scale=1.0 / hvd.size())


def test_alltoall_gradient(hvd):
    n = hvd.size()

    def fn(x):
        splits = [(hvd.rank() + p) % 2 + 1 for p in range(n)]
        out, _ = hvd.alltoall(x, splits=splits)
        return out
    check_gradient(hvd, fn, lambda r: (sum((r + p) % 2 + 1 for p in range(n)), 2), seed=6)


@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_reducescatter_gradient(hvd, op_name):
    op = getattr(hvd, op_name)
    check_gradient(hvd, lambda x: hvd.reducescatter(x, op=op, prescale_factor=2.0),
                   lambda r: (2 * hvd.size(), 2), seed=7, scale=float(hvd.size()))


def test_fp16_compressed_allreduce_gradient_flows(hvd):
    x = torch.ones(4, requires_grad=True)
    hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16).sum().backward()
    assert x.grad.dtype == torch.float32
    assert x.grad.tolist() == [float(hvd.size())] * 4
