"""The framework-neutral layer `cohort`: numpy arrays and any buffer. Run
under `cohort run -np 2`."""
import array

import numpy as np
import pytest

import cohort


@pytest.fixture(scope="module")
def job(request):
    if "COHORT_RANK" not in __import__("os").environ:
        pytest.skip("needs `cohort run -np N`")
    cohort.init()
    yield cohort
    if request.session.testsfailed == 0:
        cohort.shutdown()


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int32, np.int64, np.float16, np.float32,
                                   np.float64])
def test_allreduce_sum_and_average(job, dtype):
    n, me = job.size(), job.rank()
    x = np.arange(6, dtype=dtype).reshape(2, 3) + me
    total = sum(np.arange(6).reshape(2, 3) + r for r in range(n))
    assert np.array_equal(job.allreduce(x, op=job.Sum), total.astype(dtype))
    avg = job.allreduce(x)
    expected = total / n if np.dtype(dtype).kind == "f" else total // n
    assert avg.dtype == dtype and np.allclose(avg, expected)
    y = x.copy()
    assert job.allreduce_(y, op=job.Max) is y
    assert np.array_equal(y, np.arange(6, dtype=dtype).reshape(2, 3) + (n - 1))


def test_any_buffer_and_lists(job):
    buf = array.array("d", [1.0, 2.0])
    assert job.allreduce(buf, op=job.Sum).tolist() == [job.size() * 1.0, job.size() * 2.0]
    assert job.allreduce(bytearray(b"\x01\x02"), op=job.Sum).tolist() == [job.size(),
                                                                          2 * job.size()]
    assert job.allreduce([1, 2], op=job.Min).tolist() == [1, 2]


def test_allgather_broadcast_alltoall_reducescatter(job):
    n, me = job.size(), job.rank()
    got = job.allgather(np.full((me + 1, 2), me, dtype=np.int32))
    assert got[:, 0].tolist() == [r for r in range(n) for _ in range(r + 1)]
    assert job.broadcast(np.array([me, me]), root_rank=n - 1).tolist() == [n - 1, n - 1]
    x = np.zeros(3)
    job.broadcast_(x + me if me == 0 else x, 0)  # a copy on rank 0: x itself stays zeros
    y = np.full(3, float(me))
    job.broadcast_(y, 1)
    assert y.tolist() == [1.0] * 3
    out, splits = job.alltoall(np.arange(2 * n, dtype=np.float32) + 100 * me)
    assert splits == [2] * n
    assert out.tolist() == [100 * r + 2 * me + k for r in range(n) for k in range(2)]
    rs = job.reducescatter(np.ones((n, 2)), op=job.Sum)
    assert rs.tolist() == [[float(n)] * 2]
    g = job.grouped_allreduce([np.ones(2), np.ones(3, dtype=np.int64)], op=job.Sum)
    assert g[0].tolist() == [float(n)] * 2 and g[1].tolist() == [n] * 3
    job.barrier()


def test_errors(job):
    with pytest.raises(ValueError, match="dtype uint16 is not supported"):
        job.allreduce(np.zeros(2, dtype=np.uint16))
    with pytest.raises(TypeError, match="expected a numpy array or a buffer"):
        job.allreduce({"a": 1})
    with pytest.raises(ValueError, match="writable C-contiguous"):
        job.allreduce_(np.zeros((2, 2)).T)
    with pytest.raises(RuntimeError, match="np.shape"):
        job.allreduce(np.zeros(2 + job.rank()), name="np.shape")
    with pytest.raises(ValueError, match="global process set cannot be removed"):
        job.remove_process_set(job.global_process_set)
    assert job.global_process_set.ranks == list(range(job.size()))
    assert job.global_process_set.size() == job.size()


def test_engine_stats_count_fused_and_lone_allreduces(job):
    def delta(before):
        after = job.engine_stats()
        return {k: after[k] - before[k] for k in after}

    before = job.engine_stats()
    sizes = [4, 8, 20]
    out = job.grouped_allreduce([np.ones(n, np.float32) for n in sizes], op=job.Sum)
    assert [o.tolist() for o in out] == [[float(job.size())] * n for n in sizes]
    assert delta(before) == {"cycles": 1, "allreduces": 1, "allreduced_tensors": 3,
                             "fused_allreduces": 1, "fused_tensors": 3, "fused_bytes": 32 * 4}
    before = job.engine_stats()
    job.allreduce(np.ones(5, np.float32), op=job.Sum)
    assert delta(before) == {"cycles": 1, "allreduces": 1, "allreduced_tensors": 1,
                             "fused_allreduces": 0, "fused_tensors": 0, "fused_bytes": 0}
