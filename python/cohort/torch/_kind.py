"""torch tensors as an ArrayKind, and the checks every cohort.torch call makes
on its inputs (CPU or CUDA memory, a supported dtype, contiguous layout).
CUDA tensors go to the engine with their device and torch's current stream
(docs/gpu.md); nothing here touches torch.cuda for CPU tensors."""
import torch

from .. import _ops

_CODES = {
    torch.uint8: _ops.UINT8, torch.int8: _ops.INT8, torch.int32: _ops.INT32,
    torch.int64: _ops.INT64, torch.float16: _ops.FLOAT16, torch.bfloat16: _ops.BFLOAT16,
    torch.float32: _ops.FLOAT32, torch.float64: _ops.FLOAT64, torch.int16: _ops.INT16,
    torch.bool: _ops.BOOL,
}
_DTYPES = {code: dtype for dtype, code in _CODES.items()}
SUPPORTED = ", ".join(str(d) for d in _CODES)


def dtype_code(dtype, what):
    code = _CODES.get(dtype)
    if code is None:
        raise ValueError("%s: dtype %s is not supported by cohort (supported: %s)" %
                         (what, dtype, SUPPORTED))
    return code


def check(tensor, what):
    """Raises unless `tensor` is a CPU or CUDA tensor of a supported dtype."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError("%s: expected a torch.Tensor, got %s" % (what, type(tensor).__name__))
    # is_cpu first, not device.type: a training step checks ~160 tensors
    if not tensor.is_cpu and not tensor.is_cuda:
        raise ValueError("%s: tensor is on device %s; cohort works on CPU and CUDA tensors only "
                         "(move it with .cpu())" % (what, tensor.device))
    if tensor.is_sparse:
        raise ValueError("%s: sparse tensors are only accepted by allreduce and allreduce_async "
                         "(as in Horovod); use .to_dense()" % what)
    dtype_code(tensor.dtype, what)
    return tensor


def contiguous(tensor, what):
    """A checked, contiguous view or copy of `tensor`, detached from autograd."""
    return check(tensor, what).detach().contiguous()


class TorchKind(_ops.ArrayKind):
    def describe(self, tensor):
        return tensor.data_ptr(), tuple(tensor.shape), _CODES[tensor.dtype]

    def empty(self, shape, dtype, like):
        return torch.empty(shape, dtype=_DTYPES[dtype])

    def device(self, tensor):
        if tensor.is_cpu:
            return None
        index = tensor.device.index
        return index, torch.cuda.current_stream(index).cuda_stream

    def current_stream(self, device_index):
        return torch.cuda.current_stream(device_index).cuda_stream


KIND = TorchKind()
