"""Error cases: arguments that disagree across ranks fail the operation on
every rank with the engine's message (and the job carries on), bad local
arguments raise ValueError/TypeError naming what was wrong. Run under
`cohort run -np 3`."""
import pytest
import torch


def test_shape_mismatch_raises_on_every_rank(hvd):
    shape = (3,) if hvd.rank() == 0 else (4,)
    with pytest.raises(RuntimeError, match=r"mismatch.shape|shape") as info:
        hvd.allreduce(torch.ones(shape), name="err.shape")
    assert "err.shape" in str(info.value)
    assert not isinstance(info.value, ValueError)


def test_dtype_mismatch_raises_on_every_rank(hvd):
    dtype = torch.float32 if hvd.rank() == 0 else torch.float64
    with pytest.raises(RuntimeError, match="err.dtype") as info:
        hvd.allreduce(torch.ones(3, dtype=dtype), name="err.dtype")
    assert "float32" in str(info.value) and "float64" in str(info.value)


def test_op_mismatch_raises_on_every_rank(hvd):
    op = hvd.Sum if hvd.rank() == 0 else hvd.Max
    with pytest.raises(RuntimeError, match="err.op"):
        hvd.allreduce(torch.ones(3), name="err.op", op=op)


def test_root_mismatch_raises_on_every_rank(hvd):
    with pytest.raises(RuntimeError, match="err.root") as info:
        hvd.broadcast(torch.ones(2), root_rank=hvd.rank(), name="err.root")
    assert "root" in str(info.value)


def test_allgather_trailing_dimension_mismatch(hvd):
    with pytest.raises(RuntimeError, match="err.allgather"):
        hvd.allgather(torch.ones(2, 1 + (hvd.rank() == 0)), name="err.allgather")


def test_job_carries_on_after_errors(hvd):
    assert hvd.allreduce(torch.ones(2), op=hvd.Sum).tolist() == [float(hvd.size())] * 2


def test_duplicate_name_in_flight_raises_value_error(hvd):
    # Rank 0 holds back its submission until the others have tried the
    # duplicate, so their first "err.dup" cannot complete in between.
    if hvd.rank() != 0:
        first = hvd.allreduce_async(torch.ones(2), name="err.dup", op=hvd.Sum)
        with pytest.raises(ValueError, match="err.dup"):
            hvd.allreduce_async(torch.ones(2), name="err.dup", op=hvd.Sum)
        hvd.barrier()
    else:
        hvd.barrier()
        first = hvd.allreduce_async(torch.ones(2), name="err.dup", op=hvd.Sum)
    assert hvd.synchronize(first).tolist() == [float(hvd.size())] * 2


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_unsupported_dtype_is_a_clear_value_error(hvd, dtype):
    with pytest.raises(ValueError, match=r"allreduce: dtype torch\.\w+ is not supported .*"
                                         r"supported: torch.uint8"):
        hvd.allreduce(torch.zeros(3, dtype=dtype))
    with pytest.raises(ValueError, match="broadcast_: dtype"):
        hvd.broadcast_(torch.zeros(3, dtype=dtype), 0)


def test_non_cpu_tensor_and_non_tensor(hvd):
    with pytest.raises(ValueError, match="device meta; cohort works on CPU and CUDA tensors only"):
        hvd.allreduce(torch.empty(3, device="meta"))
    with pytest.raises(TypeError, match="allgather: expected a torch.Tensor, got list"):
        hvd.allgather([1, 2, 3])


def test_bad_splits_and_roots(hvd):
    n = hvd.size()
    with pytest.raises(ValueError, match="split"):
        hvd.alltoall(torch.ones(n, 2), splits=[1] * (n + 1))
    with pytest.raises(ValueError, match="split"):
        hvd.alltoall(torch.ones(n, 2), splits=[2] * n)
    with pytest.raises(ValueError, match="root"):
        hvd.broadcast(torch.ones(2), root_rank=n)


def test_optimizer_argument_errors(hvd):
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="unique"):
        hvd.DistributedOptimizer(opt, named_parameters=[("w", model.weight), ("w", model.bias)])
    with pytest.raises(ValueError, match="not named"):
        hvd.DistributedOptimizer(opt, named_parameters=[("w", model.weight)])
    with pytest.raises(ValueError, match="gradient_predivide_factor"):
        hvd.DistributedOptimizer(opt, op=hvd.Sum, gradient_predivide_factor=2.0)


def test_zero_grad_before_step_is_refused(hvd):
    model = torch.nn.Linear(2, 1)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    model(torch.ones(1, 2)).sum().backward()
    with pytest.raises(AssertionError, match="zero_grad"):
        opt.zero_grad()
    opt.step()
    opt.zero_grad()


def test_a_gpu_tensor_without_a_cuda_driver_names_what_is_missing(hvd):
    import ctypes
    from cohort import _cohort, _ops
    try:
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("this machine has a CUDA driver (libcuda.so.1 loads)")
    except OSError:
        pass
    t = torch.ones(3)
    # What cohort.torch submits for a CUDA tensor: its device and stream.
    with pytest.raises(RuntimeError, match=r"allreduce of tensor 'err\.gpu' on CUDA device 0: "
                                           r"CUDA driver not found \(tried .*libcuda\.so\.1: "):
        _cohort.allreduce_async("err.gpu", t.data_ptr(), t.data_ptr(), [3], _ops.FLOAT32,
                                _ops.Sum, 1.0, 1.0, 0, (0, 0))
    # Host tensors are unaffected.
    assert hvd.allreduce(t, op=hvd.Sum, name="err.gpu.after").tolist() == [hvd.size()] * 3
