"""Shared-memory buffers (cohort.SharedMemory, cohort.shared_array,
cohort.torch.shared_zeros, cohort.torch.share_gradients) on 2 ranks of one
host: results equal the ordinary buffers' bit for bit, the peers really map
each other's memory (their regions show in /proc/self/maps), gradients stay
in it through training, and memory is freed with its last view."""
import gc
import mmap
import warnings

import numpy as np
import pytest
import torch

import cohort

COUNT = 1 << 20  # 4 MiB of float32: above the single-copy threshold (1 MiB)


def regions():
    """Start addresses of the shared regions mapped in this process."""
    with open("/proc/self/maps") as f:
        return {int(line.split("-")[0], 16) for line in f if "/memfd:cohort-shared-" in line}


def own_base(array_or_tensor):
    ptr = (array_or_tensor.ctypes.data if isinstance(array_or_tensor, np.ndarray)
           else array_or_tensor.data_ptr())
    return ptr - mmap.PAGESIZE


@pytest.fixture(scope="module")
def two_ranks(hvd):
    if hvd.size() != 2 or hvd.local_size() != 2:
        pytest.skip("needs 2 ranks on one host")
    if not cohort.shm_single_copy():
        pytest.skip("the kernel refuses single copy between the ranks here")
    return hvd


def test_shared_array_is_zeroed_and_reduces_like_ordinary_memory(two_ranks):
    shared = cohort.shared_array((COUNT,), np.float32)
    assert shared.shape == (COUNT,) and shared.dtype == np.float32 and not shared.any()
    values = (np.arange(COUNT, dtype=np.float32) % 97) * (cohort.rank() + 1)
    shared[:] = values
    plain = values.copy()
    cohort.allreduce_(shared, op=cohort.Sum, name="shared.array")
    cohort.allreduce_(plain, op=cohort.Sum, name="plain.array")
    assert np.array_equal(shared, plain)
    assert np.array_equal(shared, (np.arange(COUNT, dtype=np.float32) % 97) * 3)
    peers = regions() - {own_base(shared)}
    assert peers, "the peer's shared region was not mapped: the zero-copy path did not run"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int32])
def test_shared_tensor_allreduce_matches_ordinary(two_ranks, dtype):
    hvd = two_ranks
    shared = cohort.torch.shared_zeros(COUNT // 2, 2, dtype=dtype)
    assert shared.shape == (COUNT // 2, 2) and shared.dtype == dtype and not shared.any()
    torch.manual_seed(hvd.rank())
    values = torch.randint(-50, 50, (COUNT // 2, 2)).to(dtype)
    shared.copy_(values)
    plain = values.clone()
    for op in (hvd.Sum, hvd.Average, hvd.Min, hvd.Max):
        a = hvd.allreduce(shared, op=op, name="shared.%s.%s" % (dtype, op))
        b = hvd.allreduce(plain, op=op, name="plain.%s.%s" % (dtype, op))
        assert torch.equal(a, b), (dtype, op)
    hvd.allreduce_(shared, op=hvd.Sum, name="shared.inplace.%s" % dtype)
    hvd.allreduce_(plain, op=hvd.Sum, name="plain.inplace.%s" % dtype)
    assert torch.equal(shared, plain)


def _model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 512))


def _train(hvd, model, steps, name):
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
                                   named_parameters=[(name + n, p)
                                                     for n, p in model.named_parameters()])
    torch.manual_seed(100 + hvd.rank())
    for _ in range(steps):
        opt.zero_grad()
        model(torch.randn(32, 512)).pow(2).mean().backward()
        opt.step()
    return opt


def test_shared_gradients_train_bit_identical_and_stay_shared(two_ranks):
    hvd = two_ranks
    shared_model, plain_model = _model(), _model()
    assert hvd.share_gradients(shared_model) == 4
    views = {p: p.grad.data_ptr() for p in shared_model.parameters()}
    before = regions()
    _train(hvd, shared_model, 3, "shared.")
    _train(hvd, plain_model, 3, "plain.")
    for a, b in zip(shared_model.parameters(), plain_model.parameters()):
        assert torch.equal(a, b)
    assert all(p.grad.data_ptr() == views[p] for p in shared_model.parameters()), \
        "a gradient left its shared view"
    assert regions() - before, "no peer region was mapped: gradients were not reduced in place"


def test_gradient_moved_out_warns_once_and_stays_exact(two_ranks):
    hvd = two_ranks
    shared_model, plain_model = _model(), _model()
    hvd.share_gradients(shared_model)
    for p in shared_model.parameters():
        p.grad = None  # what zero_grad(set_to_none=True) does
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _train(hvd, shared_model, 2, "moved.")
    moved = [w for w in caught if "no longer in shared memory" in str(w.message)]
    assert len(moved) == 1, [str(w.message) for w in caught]
    _train(hvd, plain_model, 2, "moved.plain.")
    for a, b in zip(shared_model.parameters(), plain_model.parameters()):
        assert torch.equal(a, b)


def test_memory_is_freed_with_its_last_view(two_ranks):
    array = cohort.shared_array(1000, np.int64)
    base = own_base(array)
    view = array[10:20]
    del array
    gc.collect()
    assert base in regions(), "freed while a view was alive"
    del view
    gc.collect()
    assert base not in regions()


def test_bad_sizes_are_refused(two_ranks):
    with pytest.raises(ValueError, match="nbytes must be >= 0, got -1"):
        cohort.SharedMemory(-1)
    assert cohort.torch.shared_zeros(0, 3).shape == (0, 3)
    assert cohort.shared_array((0,)).shape == (0,)
