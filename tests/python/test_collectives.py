"""Every collective of cohort.torch against a single-process reference, for
each dtype cohort supports. Run under `cohort run -np 2` and `-np 3`."""
import re
import pytest
import torch

from cohort import _cohort
from conftest import rank_inputs

DTYPES = [torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def reference_reduce(inputs, op, hvd):
    stacked = torch.stack([t.to(torch.float64) for t in inputs])
    if op == hvd.Sum:
        out = stacked.sum(0)
    elif op == hvd.Average:
        out = stacked.sum(0) / len(inputs)
        if not inputs[0].dtype.is_floating_point:
            out = torch.trunc(out)  # integer average truncates
    elif op == hvd.Min:
        out = stacked.min(0).values
    elif op == hvd.Max:
        out = stacked.max(0).values
    else:
        out = stacked.prod(0)
    return out.to(inputs[0].dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op_name", ["Sum", "Average", "Min", "Max", "Product"])
def test_allreduce_matches_reference(hvd, dtype, op_name):
    op = getattr(hvd, op_name)
    low, high = (1, 3) if op_name == "Product" else (-3, 4)
    inputs = rank_inputs(hvd.size(), (5, 3), dtype, seed=11, low=low, high=high)
    mine = inputs[hvd.rank()]
    expected = reference_reduce(inputs, op, hvd)
    out = hvd.allreduce(mine, op=op, name="ar.%s.%s" % (op_name, dtype))
    assert out.dtype == dtype and out.shape == mine.shape
    assert torch.equal(out, expected), (out, expected)
    assert torch.equal(mine, inputs[hvd.rank()])  # the input is untouched


@pytest.mark.parametrize("dtype", DTYPES)
def test_allreduce_in_place_and_async_forms(hvd, dtype):
    inputs = rank_inputs(hvd.size(), (4, 2), dtype, seed=12)
    expected = reference_reduce(inputs, hvd.Sum, hvd)
    t = inputs[hvd.rank()].clone()
    assert hvd.allreduce_(t, op=hvd.Sum) is t
    assert torch.equal(t, expected)
    h = hvd.allreduce_async(inputs[hvd.rank()], op=hvd.Sum)
    out = hvd.synchronize(h)
    assert hvd.poll(h)
    assert torch.equal(out, expected)
    t2 = inputs[hvd.rank()].clone()
    assert hvd.synchronize(hvd.allreduce_async_(t2, op=hvd.Sum)) is t2
    assert torch.equal(t2, expected)


def test_allreduce_average_is_the_default_and_average_flag_still_works(hvd):
    inputs = rank_inputs(hvd.size(), (6,), torch.float64, seed=13)
    expected = torch.stack(inputs).mean(0)
    assert torch.allclose(hvd.allreduce(inputs[hvd.rank()]), expected)
    with pytest.warns(DeprecationWarning):
        summed = hvd.allreduce(inputs[hvd.rank()], average=False)
    assert torch.equal(summed, torch.stack(inputs).sum(0))
    with pytest.raises(ValueError, match="supersedes average"):
        hvd.allreduce(inputs[hvd.rank()], average=True, op=hvd.Sum)


@pytest.mark.parametrize("dtype", FLOATS)
def test_allreduce_prescale_postscale(hvd, dtype):
    inputs = rank_inputs(hvd.size(), (7,), dtype, seed=14)
    expected = (torch.stack([t.double() * 0.5 for t in inputs]).sum(0) * 4.0).to(dtype)
    out = hvd.allreduce(inputs[hvd.rank()], op=hvd.Sum, prescale_factor=0.5, postscale_factor=4.0)
    assert torch.equal(out, expected)


def test_allreduce_non_contiguous_and_zero_dim_and_empty(hvd):
    base = rank_inputs(hvd.size(), (4, 6), torch.float32, seed=15)
    out = hvd.allreduce(base[hvd.rank()].t(), op=hvd.Sum)
    assert torch.equal(out, torch.stack(base).sum(0).t())
    t = base[hvd.rank()].clone().t()  # in place into a non-contiguous tensor
    hvd.allreduce_(t, op=hvd.Sum)
    assert torch.equal(t, torch.stack(base).sum(0).t())
    scalar = hvd.allreduce(torch.tensor(float(hvd.rank() + 1)), op=hvd.Sum)
    assert scalar.shape == () and scalar.item() == sum(range(1, hvd.size() + 1))
    empty = hvd.allreduce(torch.empty(0, 3), op=hvd.Sum)
    assert empty.shape == (0, 3)


def test_allreduce_fp16_compression(hvd):
    inputs = rank_inputs(hvd.size(), (9,), torch.float32, seed=16)
    out = hvd.allreduce(inputs[hvd.rank()], op=hvd.Sum, compression=hvd.Compression.fp16)
    assert out.dtype == torch.float32
    assert torch.equal(out, torch.stack(inputs).sum(0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_grouped_allreduce_all_forms(hvd, dtype):
    inputs = [rank_inputs(hvd.size(), shape, dtype, seed=17 + i)
              for i, shape in enumerate([(3,), (2, 2), (5, 1)])]
    mine = [per_rank[hvd.rank()] for per_rank in inputs]
    expected = [reference_reduce(per_rank, hvd.Sum, hvd) for per_rank in inputs]
    for out in (hvd.grouped_allreduce(mine, op=hvd.Sum),
                hvd.synchronize(hvd.grouped_allreduce_async(mine, op=hvd.Sum))):
        assert all(torch.equal(o, e) for o, e in zip(out, expected))
    copies = [t.clone() for t in mine]
    hvd.grouped_allreduce_(copies, op=hvd.Sum)
    assert all(torch.equal(o, e) for o, e in zip(copies, expected))
    copies = [t.clone() for t in mine]
    hvd.synchronize(hvd.grouped_allreduce_async_(copies, op=hvd.Sum))
    assert all(torch.equal(o, e) for o, e in zip(copies, expected))


def test_grouped_allreduce_mixed_dtypes(hvd):
    a = torch.full((3,), hvd.rank() + 1, dtype=torch.int32)
    b = torch.full((2,), float(hvd.rank()), dtype=torch.float64)
    out = hvd.grouped_allreduce([a, b], op=hvd.Sum)
    n = hvd.size()
    assert torch.equal(out[0], torch.full((3,), n * (n + 1) // 2, dtype=torch.int32))
    assert torch.equal(out[1], torch.full((2,), float(n * (n - 1) // 2), dtype=torch.float64))


@pytest.mark.parametrize("dtype", DTYPES)
def test_allgather_with_different_first_dimensions(hvd, dtype):
    gen = torch.Generator().manual_seed(21)
    inputs = [torch.randint(0, 5, (r + 1, 3), generator=gen).to(dtype) for r in range(hvd.size())]
    expected = torch.cat(inputs)
    assert torch.equal(hvd.allgather(inputs[hvd.rank()]), expected)
    assert torch.equal(hvd.synchronize(hvd.allgather_async(inputs[hvd.rank()])), expected)


def test_grouped_allgather_and_scalars(hvd):
    a = torch.tensor([hvd.rank()] * (hvd.rank() + 1), dtype=torch.int64)
    b = torch.tensor(float(hvd.rank()))
    out = hvd.grouped_allgather([a, b])
    assert out[0].tolist() == [r for r in range(hvd.size()) for _ in range(r + 1)]
    assert out[1].tolist() == [float(r) for r in range(hvd.size())]
    out = hvd.synchronize(hvd.grouped_allgather_async([a]))
    assert out[0].tolist() == [r for r in range(hvd.size()) for _ in range(r + 1)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_all_forms(hvd, dtype):
    root = hvd.size() - 1
    inputs = rank_inputs(hvd.size(), (4, 3), dtype, seed=22)
    mine = inputs[hvd.rank()].clone()
    assert torch.equal(hvd.broadcast(mine, root), inputs[root])
    assert torch.equal(mine, inputs[hvd.rank()])
    assert torch.equal(hvd.synchronize(hvd.broadcast_async(mine, root)), inputs[root])
    t = mine.clone()
    assert hvd.broadcast_(t, root) is t and torch.equal(t, inputs[root])
    t = mine.clone()
    hvd.synchronize(hvd.broadcast_async_(t, root))
    assert torch.equal(t, inputs[root])


@pytest.mark.parametrize("dtype", DTYPES)
def test_alltoall_with_splits_returns_received_splits(hvd, dtype):
    n, me = hvd.size(), hvd.rank()
    # rank r sends (r + p) % 3 rows to rank p; row values name sender and receiver.
    splits = [(me + p) % 3 for p in range(n)]
    rows = [torch.full((2,), 10 * me + p, dtype=torch.int64) for p in range(n) for _ in
            range(splits[p])]
    send = (torch.stack(rows) if rows else torch.empty(0, 2, dtype=torch.int64)).to(dtype)
    out, received = hvd.alltoall(send, splits=splits)
    expected_splits = [(r + me) % 3 for r in range(n)]
    assert received.tolist() == expected_splits
    expected = [10 * r + me for r in range(n) for _ in range(expected_splits[r])]
    assert out.shape == (sum(expected_splits), 2)
    assert out[:, 0].to(torch.int64).tolist() == expected
    out2, received2 = hvd.synchronize(hvd.alltoall_async(send, splits=torch.tensor(splits)))
    assert torch.equal(out2, out) and received2.tolist() == expected_splits


def test_alltoall_even_split_by_default(hvd):
    n, me = hvd.size(), hvd.rank()
    send = torch.arange(n * 2, dtype=torch.float32) + 100 * me
    out = hvd.alltoall(send)
    assert out.tolist() == [100 * r + 2 * me + k for r in range(n) for k in range(2)]
    with pytest.raises(ValueError, match="not divisible"):
        hvd.alltoall(torch.zeros(n + 1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_reducescatter_sum_and_average(hvd, dtype):
    n, me = hvd.size(), hvd.rank()
    rows = 2 * n + 1  # uneven: the first rank gets one row more
    inputs = rank_inputs(n, (rows, 2), dtype, seed=23)
    counts = [rows // n + (1 if r < rows % n else 0) for r in range(n)]
    start = sum(counts[:me])
    for op in (hvd.Sum, hvd.Average):
        expected = reference_reduce(inputs, op, hvd)[start:start + counts[me]]
        out = hvd.reducescatter(inputs[me], op=op)
        assert torch.equal(out, expected), (op, out, expected)
    out = hvd.synchronize(hvd.reducescatter_async(inputs[me], op=hvd.Sum))
    assert torch.equal(out, reference_reduce(inputs, hvd.Sum, hvd)[start:start + counts[me]])


def test_grouped_reducescatter_and_scale_factors(hvd):
    n, me = hvd.size(), hvd.rank()
    a = torch.ones(n, 2) * (me + 1)
    b = torch.arange(n, dtype=torch.float64) * (me + 1)
    total = n * (n + 1) / 2
    out = hvd.grouped_reducescatter([a, b], op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5)
    assert out[0].tolist() == [[total, total]]
    assert out[1].tolist() == [me * total]
    out = hvd.synchronize(hvd.grouped_reducescatter_async([a], op=hvd.Sum))
    assert out[0].tolist() == [[total, total]]


def test_barrier_join_and_topology(hvd):
    hvd.barrier()
    assert 0 <= hvd.rank() < hvd.size()
    assert hvd.local_size() * hvd.cross_size() == hvd.size()
    assert 0 <= hvd.local_rank() < hvd.local_size() and 0 <= hvd.cross_rank() < hvd.cross_size()
    assert hvd.is_initialized()
    # Uneven inputs: rank r runs r+1 steps, then joins; joined ranks add zeros.
    for step in range(hvd.rank() + 1):
        out = hvd.allreduce(torch.ones(2), op=hvd.Sum, name="join.step.%d" % step)
        assert out.tolist() == [float(hvd.size() - step)] * 2
    assert hvd.join() == hvd.size() - 1


def test_capability_queries_are_truthful(hvd):
    assert not hvd.mpi_built() and not hvd.gloo_built()
    # GPU support is in every build; NCCL counts where it loads (docs/gpu.md).
    assert hvd.cuda_built() is True
    report = _cohort.gpu_report()
    if "nccl: NCCL not found" in report:
        assert hvd.nccl_built() == 0, report
    else:  # the version code, as Horovod's: "NCCL 2.27.3 (...)" gives 22703
        major, minor, patch = re.search(r"NCCL (\d+)\.(\d+)\.(\d+)", report).groups()
        assert hvd.nccl_built() == int(major) * 10000 + int(minor) * 100 + int(patch), report
    assert report.startswith("driver: "), report
    assert not hvd.rocm_built() and not hvd.ddl_built()
    assert not hvd.ccl_built() and not hvd.mpi_enabled() and not hvd.gloo_enabled()
    assert hvd.is_homogeneous()


def test_timeline_records_named_tensors(hvd, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("timeline") / "trace-{rank}.json")
    hvd.start_timeline(path)
    hvd.allreduce(torch.ones(3), name="timeline.tensor")
    hvd.stop_timeline()
    with open(path.replace("{rank}", str(hvd.rank()))) as f:
        assert "timeline.tensor" in f.read()
