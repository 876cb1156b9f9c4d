"""The collectives of cohort.torch with horovod.torch's names, arguments and
semantics: blocking forms that autograd differentiates, `_async` forms that
return a handle for `poll`/`synchronize`, and in-place `_` forms.

Tensors must be CPU or CUDA tensors of a supported dtype; non-contiguous ones
are copied (and, for in-place forms, copied back). CUDA tensors stay on the
device: the engine waits for torch's current stream and synchronize() makes
the current stream wait for the result (docs/gpu.md); alltoall of CUDA
tensors is staged through host memory. Errors from the engine (a
mismatch on any rank fails the operation on every rank) raise
cohort.CohortError, a RuntimeError; bad arguments raise ValueError."""
import warnings

import torch

from .. import _cohort, _ops
from .._cohort import CohortValueError
from .._ops import Sum, Average, Min, Max, Product, Adasum  # noqa: F401 -- part of the API
from ..process_sets import global_process_set, set_id, set_size
from ._kind import KIND, check, contiguous
from .compression import Compression


def handle_average_backwards_compatibility(op, average):
    """Horovod's rule: `average` (deprecated) or `op`, not both; default Average."""
    if op is not None:
        if average is not None:
            raise ValueError("The op parameter supersedes average. Please provide only one of "
                             "them.")
        return op
    if average is not None:
        warnings.warn("Parameter `average` has been replaced with `op` and will be removed",
                      DeprecationWarning)
        return Average if average else Sum
    return Average


def poll(handle):
    """True once the operation behind `handle` has completed."""
    return handle.poll()


def synchronize(handle):
    """Waits for `handle` and returns the operation's output."""
    return handle.wait()


def _inplace_buffer(tensor, what):
    """The contiguous buffer an in-place operation works on, and the step that
    puts the result back into `tensor` (None when the buffer is the tensor)."""
    check(tensor, what)
    if tensor.is_contiguous():
        return tensor, None  # the engine writes its memory; no view (or autograd) involved
    buf = tensor.detach().contiguous()

    def copy_back():
        with torch.no_grad():
            tensor.copy_(buf)

    return buf, copy_back


def _returning(tensor, copy_back):
    def finish(_):
        if copy_back is not None:
            copy_back()
        return tensor
    return finish


# ---- allreduce ----

class SparseHandle(_ops.Handle):
    """What sparse_allreduce_async returns: Horovod returns a function that
    waits and gives the result (`handle()`); this is also a handle for
    synchronize() and poll(), like every other _async result."""
    __slots__ = ()

    def __call__(self):
        return self.wait()


def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """Reduction of a sparse COO tensor, as Horovod does it: indices and
    values are allgathered (Average divides the values by the set's size), so
    the result is uncoalesced: a position several ranks hold appears once per
    rank. Returns a SparseHandle: call it (Horovod's way) or synchronize it."""
    if op not in (Sum, Average):
        raise CohortValueError("sparse allreduce: op must be Sum or Average, got %s" %
                               _ops.OP_NAMES.get(op, op))
    base = _ops.names.make("sparse_allreduce", name, set_id(process_set))
    indices = allgather_async(tensor._indices().transpose(0, 1).contiguous(),
                              base + ".indices", process_set)
    values = allgather_async(tensor._values(), base + ".values", process_set)

    def finish(_):
        vals = values.wait()
        idx = indices.wait()
        if op == Average:
            vals = vals / set_size(process_set)
        return torch.sparse_coo_tensor(idx.transpose(0, 1), vals, tensor.size())

    return SparseHandle([], (indices, values), finish)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    op = handle_average_backwards_compatibility(op, average)
    if isinstance(tensor, torch.Tensor) and tensor.is_sparse:
        return sparse_allreduce_async(tensor, name, op, process_set)
    send = contiguous(tensor, "allreduce")
    out = torch.empty_like(send, memory_format=torch.contiguous_format)
    return _ops.allreduce_async(KIND, send, out, name, op, prescale_factor, postscale_factor,
                                set_id(process_set))


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    op = handle_average_backwards_compatibility(op, average)
    buf, copy_back = _inplace_buffer(tensor, "allreduce_")
    if copy_back is None:  # the common case: the engine writes into `tensor` itself
        return _ops.allreduce_async(KIND, buf, buf, name, op, prescale_factor, postscale_factor,
                                    set_id(process_set), output=tensor)
    h = _ops.allreduce_async(KIND, buf, buf, name, op, prescale_factor, postscale_factor,
                             set_id(process_set))
    return h.then(_returning(tensor, copy_back))


def _allreduce_grad(grad, saved, op, prescale, postscale, process_set):
    """Gradient of out = postscale * op_r(prescale * x_r) for a loss summed over ranks."""
    if op in (Sum, Average):
        return synchronize(allreduce_async(grad, op=op, prescale_factor=prescale,
                                           postscale_factor=postscale, process_set=process_set))
    x, out = saved
    total = synchronize(allreduce_async(grad * out, op=Sum, process_set=process_set)) \
        if op == Product else synchronize(allreduce_async(grad, op=Sum, process_set=process_set))
    if op == Product:
        return total / x  # d(prod)/dx_r = prod / x_r (x_r != 0)
    # Min/Max: the gradient flows to the ranks holding the extreme value.
    return total * (prescale * postscale) * (x * prescale == out / postscale).to(grad.dtype)


class _AllreduceFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, prescale, postscale, process_set):
        ctx.args = (op, prescale, postscale, process_set)
        out = synchronize(allreduce_async(tensor, name=name, op=op, prescale_factor=prescale,
                                          postscale_factor=postscale, process_set=process_set))
        if op not in (Sum, Average):
            ctx.save_for_backward(tensor, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        return (_allreduce_grad(grad, ctx.saved_tensors, *ctx.args),) + (None,) * 5


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """A new tensor: postscale * op over ranks of (prescale * tensor). Differentiable
    (a sparse COO tensor goes through sparse_allreduce_async, not differentiated)."""
    op = handle_average_backwards_compatibility(op, average)
    if isinstance(tensor, torch.Tensor) and tensor.is_sparse:
        return synchronize(sparse_allreduce_async(tensor.detach(), name, op, process_set))
    check(tensor, "allreduce")
    compressed, cctx = compression.compress(tensor)
    out = _AllreduceFunction.apply(compressed, name, op, prescale_factor, postscale_factor,
                                   process_set)
    return compression.decompress(out, cctx)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor,
                                        postscale_factor, process_set))


# ---- grouped allreduce ----

def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    op = handle_average_backwards_compatibility(op, average)
    sends = [contiguous(t, "grouped_allreduce") for t in tensors]
    outs = [torch.empty_like(s, memory_format=torch.contiguous_format) for s in sends]
    return _ops.grouped_allreduce_async(KIND, sends, outs, name, op, prescale_factor,
                                        postscale_factor, set_id(process_set))


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    op = handle_average_backwards_compatibility(op, average)
    bufs = [_inplace_buffer(t, "grouped_allreduce_") for t in tensors]
    h = _ops.grouped_allreduce_async(KIND, [b for b, _ in bufs], [b for b, _ in bufs], name, op,
                                     prescale_factor, postscale_factor, set_id(process_set))

    def finish(_):
        for _, copy_back in bufs:
            if copy_back is not None:
                copy_back()
        return list(tensors)

    return h.then(finish)


class _GroupedAllreduceFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, prescale, postscale, process_set, *tensors):
        ctx.args = (op, prescale, postscale, process_set)
        return tuple(synchronize(grouped_allreduce_async(
            list(tensors), name=name, op=op, prescale_factor=prescale,
            postscale_factor=postscale, process_set=process_set)))

    @staticmethod
    def backward(ctx, *grads):
        op, prescale, postscale, process_set = ctx.args
        if op not in (Sum, Average):
            raise RuntimeError("grouped_allreduce: gradients are only defined for Sum and Average")
        out = synchronize(grouped_allreduce_async(list(grads), op=op, prescale_factor=prescale,
                                                  postscale_factor=postscale,
                                                  process_set=process_set))
        return (None,) * 5 + tuple(out)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    op = handle_average_backwards_compatibility(op, average)
    compressed = [compression.compress(check(t, "grouped_allreduce")) for t in tensors]
    outs = _GroupedAllreduceFunction.apply(name, op, prescale_factor, postscale_factor,
                                           process_set, *[c for c, _ in compressed])
    return [compression.decompress(o, cctx) for o, (_, cctx) in zip(outs, compressed)]


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                                postscale_factor, process_set))


# ---- allgather ----

def _at_least_1d(tensor):
    return tensor.reshape(1) if tensor.dim() == 0 else tensor


def _output_buffer(output, what):
    """A caller's output tensor, written in place: checked, never copied."""
    if output is None:
        return None
    check(output, what + " output")
    if not output.is_contiguous():
        raise ValueError("%s: the output tensor must be contiguous (the engine writes into it)" %
                         what)
    return output.detach()


def allgather_async(tensor, name=None, process_set=global_process_set, output=None):
    """Handle of the allgather. cohort's extension: `output`, a contiguous
    tensor the result is written into (and which wait() returns) instead of a
    new one; it may hold `tensor` at this rank's rows (in place)."""
    send = _at_least_1d(contiguous(tensor, "allgather"))
    out = _output_buffer(output, "allgather")
    if out is None and send.is_cuda:
        # Results of CUDA tensors stay on the device: the output is sized
        # from every rank's rows (one small host allgather), then filled there.
        out = _gathered_output(send, name, process_set)
        return _ops.allgather_async(KIND, send, name, set_id(process_set), out=out)
    h = _ops.allgather_async(KIND, send, name, set_id(process_set), out=out)
    return h if out is None else h.then(lambda _: output)


def _gathered_output(send, name, process_set):
    rows = synchronize(allgather_async(torch.tensor([send.shape[0]], dtype=torch.int64),
                                       None if name is None else name + ".rows", process_set))
    return torch.empty((int(rows.sum()),) + tuple(send.shape[1:]), dtype=send.dtype,
                       device=send.device)


class _AllgatherFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.rows = _at_least_1d(tensor).shape[0]
        ctx.shape = tensor.shape
        ctx.process_set = process_set
        return synchronize(allgather_async(tensor, name=name, process_set=process_set))

    @staticmethod
    def backward(ctx, grad):
        # Horovod's definition: the average over ranks of the output's
        # gradient, this rank's rows of it.
        reduced = synchronize(allreduce_async(grad, op=Average, process_set=ctx.process_set))
        rows = synchronize(allgather_async(torch.tensor([ctx.rows], dtype=torch.int64),
                                           process_set=ctx.process_set))
        offset = int(rows[:_position(ctx.process_set)].sum())
        return reduced.narrow(0, offset, ctx.rows).reshape(ctx.shape), None, None


def _position(process_set):
    return _cohort.process_set_rank(set_id(process_set))


def allgather(tensor, name=None, process_set=global_process_set):
    """Ranks' tensors concatenated along the first dimension (sizes may differ). Differentiable."""
    check(tensor, "allgather")
    return _AllgatherFunction.apply(tensor, name, process_set)


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    base = _ops.names.make("grouped_allgather", name)
    handles = [allgather_async(t, "%s.%d" % (base, i), process_set)
               for i, t in enumerate(tensors)]
    return _ops.Handle([], handles, lambda ids: [h.wait() for h in handles])


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    base = _ops.names.make("grouped_allgather", name)
    return [allgather(t, "%s.%d" % (base, i), process_set) for i, t in enumerate(tensors)]


# ---- broadcast ----

def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    buf = contiguous(tensor, "broadcast").clone(memory_format=torch.contiguous_format)
    return _ops.broadcast_async(KIND, buf, root_rank, name, set_id(process_set))


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    buf, copy_back = _inplace_buffer(tensor, "broadcast_")
    h = _ops.broadcast_async(KIND, buf, root_rank, name, set_id(process_set))
    return h.then(_returning(tensor, copy_back))


class _BroadcastFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad):
        # Horovod's definition: root's gradient is the average over ranks of
        # the output's gradient, the others' is zero.
        reduced = synchronize(allreduce_async(grad, op=Average, process_set=ctx.process_set))
        if _cohort.rank() != ctx.root_rank:
            reduced = torch.zeros_like(reduced)
        return reduced, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """A new tensor holding root_rank's tensor. Differentiable."""
    check(tensor, "broadcast")
    return _BroadcastFunction.apply(tensor, root_rank, name, process_set)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


# ---- alltoall ----

def _splits_list(splits, tensor, process_set):
    if splits is None:
        rows = tensor.shape[0] if tensor.dim() else 1
        return _ops.even_splits(rows, set_size(process_set), "alltoall")
    if isinstance(splits, torch.Tensor):
        if splits.dtype.is_floating_point or splits.dtype.is_complex or \
                splits.dtype == torch.bool:
            raise ValueError("alltoall: splits must hold integers, got a %s tensor" %
                             splits.dtype)
        return [int(s) for s in splits.reshape(-1).tolist()]
    return [int(s) for s in splits]


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Handle whose synchronize() gives (output, received_splits)."""
    send = _at_least_1d(contiguous(tensor, "alltoall"))
    device = send.device
    # received_splits lives where `splits` did (Horovod's splits.new()).
    splits_device = splits.device if isinstance(splits, torch.Tensor) else torch.device("cpu")
    splits = _splits_list(splits, send, process_set)
    if send.is_cuda:  # staged: the engine runs alltoall on host memory
        send = send.cpu()
    h = _ops.alltoall_async(KIND, send, splits, name, set_id(process_set))
    return h.then(lambda r: (r[0].to(device),
                             torch.tensor(r[1], dtype=torch.int32, device=splits_device)))


class _AlltoallFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        ctx.process_set = process_set
        ctx.shape = tensor.shape
        out, received = synchronize(alltoall_async(tensor, splits, name, process_set))
        ctx.received = received
        ctx.mark_non_differentiable(received)
        return out, received

    @staticmethod
    def backward(ctx, grad, _):
        back, _ = synchronize(alltoall_async(grad, ctx.received, process_set=ctx.process_set))
        return back.reshape(ctx.shape), None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Sends splits[p] rows to rank p (default: equal blocks). Returns the rows
    received in rank order, and with `splits` given also the rows received from
    each rank. Differentiable."""
    check(tensor, "alltoall")
    out, received = _AlltoallFunction.apply(tensor, splits, name, process_set)
    return out if splits is None else (out, received)


# ---- reducescatter ----

def _scaled(tensor, factor):
    """tensor * factor computed as Horovod does before casting back: float16
    and bfloat16 in float32, integers in float64 (truncated toward zero).
    Only for gradients: the collectives' own scale factors are the engine's."""
    if factor == 1.0:
        return tensor
    if tensor.dtype in (torch.float16, torch.bfloat16):
        return (tensor.float() * factor).to(tensor.dtype)
    if not tensor.dtype.is_floating_point:
        return (tensor.double() * factor).to(tensor.dtype)
    return tensor * factor


def _check_scatterable(tensor):
    if tensor.dim() == 0:
        raise ValueError("reducescatter: the tensor is a scalar (0-d); it needs a first "
                         "dimension to scatter")


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0, output=None):
    """Handle of the reduce-scatter. cohort's extension: `output`, a
    contiguous tensor of exactly this rank's block's shape that the result is
    written into (and which wait() returns); it may be the block's own rows
    of `tensor` (in place)."""
    _check_scatterable(check(tensor, "reducescatter"))
    send = contiguous(tensor, "reducescatter")
    out = _output_buffer(output, "reducescatter")
    if send.is_cuda:
        return _cuda_reducescatter_async(send, name, op, process_set, prescale_factor,
                                         postscale_factor, out, output)
    h = _ops.reducescatter_async(KIND, _at_least_1d(send), name, op, (), set_id(process_set),
                                 prescale_factor, postscale_factor, out=out)
    return h if out is None else h.then(lambda _: output)


def _device_factor(tensor, factor):
    """The factor a CUDA tensor is scaled by: float16 by the factor rounded to
    float16, as Horovod's GPU kernels (and cohort's, DeviceScaleFactor) do."""
    if tensor.dtype == torch.float16 and factor != 1.0:
        return float(torch.tensor(factor, dtype=torch.float64).half())
    return factor


def _cuda_reducescatter_async(send, name, op, process_set, prescale, postscale, out, output):
    """Reduce-scatter of a CUDA tensor: into a device block (the engine keeps
    no device results), scaled by torch on the current stream before and after
    (the engine scales host tensors only)."""
    prescale, postscale = _device_factor(send, prescale), _device_factor(send, postscale)
    send = _scaled(send, prescale)
    if out is None:
        pset = set_id(process_set)
        size = set_size(process_set)
        rows = _ops.scatter_rows(send.shape[0], (), size, max(_cohort.process_set_rank(pset), 0))
        out = torch.empty((rows,) + tuple(send.shape[1:]), dtype=send.dtype, device=send.device)
    h = _ops.reducescatter_async(KIND, send, name, op, (), set_id(process_set), out=out)
    result = out if output is None else output

    def finish(_):
        if postscale != 1.0:
            with torch.no_grad():
                out.copy_(_scaled(out, postscale))
        return result

    return h.then(finish)


class _ReducescatterFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale, postscale):
        if op not in (Sum, Average):
            # A CohortValueError is both: Horovod raises a RuntimeError here
            # (its test expects one), cohort's bad arguments a ValueError.
            raise CohortValueError("reducescatter: op must be Sum or Average, got %s" %
                                   _ops.OP_NAMES.get(op, op))
        ctx.args = (op, process_set, prescale * postscale)
        return synchronize(reducescatter_async(tensor, name, op, process_set, prescale,
                                               postscale))

    @staticmethod
    def backward(ctx, grad):
        # Horovod's definition: the allgather of the output's gradient, times
        # the set's size for Sum (Average is not divided), times the scales.
        op, process_set, scale = ctx.args
        if op == Sum:
            scale *= set_size(process_set)
        return _scaled(synchronize(allgather_async(grad, process_set=process_set)), scale), \
            None, None, None, None, None


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """This rank's block of the first dimension of op (Sum or Average) over
    ranks; the first rows % size ranks get one row more. Differentiable."""
    _check_scatterable(check(tensor, "reducescatter"))
    compressed, cctx = compression.compress(tensor)
    out = _ReducescatterFunction.apply(compressed, name, op, process_set, prescale_factor,
                                       postscale_factor)
    return compression.decompress(out, cctx)


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0):
    base = _ops.names.make("grouped_reducescatter", name)
    handles = [reducescatter_async(t, "%s.%d" % (base, i), op, process_set, prescale_factor,
                                   postscale_factor) for i, t in enumerate(tensors)]
    return _ops.Handle([], handles, lambda ids: [h.wait() for h in handles])


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    base = _ops.names.make("grouped_reducescatter", name)
    return [reducescatter(t, "%s.%d" % (base, i), compression, op, process_set, prescale_factor,
                          postscale_factor) for i, t in enumerate(tensors)]


# ---- synchronization ----

def join(device=-1):
    """Marks this rank as out of data: until every rank has joined it takes part
    in the others' allreduces with zeros. Returns the last rank to join."""
    del device  # CPU only; kept for Horovod's signature
    return synchronize(_ops.join_async())


def barrier(process_set=global_process_set):
    synchronize(_ops.barrier_async(set_id(process_set)))
