"""The autograd functions between tensor-parallel layers (Megatron-LM's f and
g and their sequence-parallel forms), over a tensor-parallel Group's process
set. Each is the identity for a group of one rank.

    copy_to(x)              f: identity forward, allreduce of the gradient
    reduce_from(x)          g: allreduce forward, identity backward
    gather_from(x)          allgather along the last dimension / take own slice
    scatter_to(x)           take own slice of the last dimension / allgather
    gather_from_sequence(x) allgather along dim 0 / reduce-scatter of the gradient
    reduce_scatter_to_sequence(x)  reduce-scatter along dim 0 / allgather
    scatter_to_sequence(x)  take own rows of dim 0 / allgather

Sequence parallelism keeps activations between the parallel layers split
along the sequence (dim 0, so layouts are [sequence, batch, hidden]): the
allreduce of g becomes a reduce-scatter and f's identity an allgather, the
same bytes, with LayerNorm and residuals on 1/tp of the tokens.

Collectives go through the engine with generated names: every rank of a
tensor-parallel group runs the same layers in the same order."""
import torch

from ... import _ops
from ...process_sets import set_id
from .._kind import KIND
from .mesh import Mesh


def group_of(group):
    """A Group from a Mesh (its tp line), a Group, or None (no parallelism)."""
    if isinstance(group, Mesh):
        group = group.tp
    return group if group is not None and group.size > 1 else None


def size_of(group):
    return 1 if group is None else group.size


def rank_of(group):
    return 0 if group is None else group.rank


def allreduce(x, group, op=_ops.Sum):
    """op over the group of `x` (a new tensor)."""
    buf = x.detach().contiguous().clone()
    return _ops.allreduce_async(KIND, buf, buf, None, op, 1.0, 1.0,
                                set_id(group.process_set)).wait()


def allreduce_(x, group):
    """Sum over the group, into the contiguous tensor `x`."""
    return _ops.allreduce_async(KIND, x, x, None, _ops.Sum, 1.0, 1.0,
                                set_id(group.process_set)).wait()


def _allgather_rows(x, group):
    return _ops.allgather_async(KIND, x.detach().contiguous(), None,
                                set_id(group.process_set)).wait()


def _reduce_scatter_rows(x, group):
    rows = x.shape[0]
    if rows % group.size:
        raise ValueError("sequence parallelism: dimension 0 (%d) is not divisible by the %d "
                         "tensor-parallel ranks" % (rows, group.size))
    return _ops.reducescatter_async(KIND, x.detach().contiguous(), None, _ops.Sum, (),
                                    set_id(group.process_set)).wait()


def _own_rows(x, group):
    rows = x.shape[0]
    if rows % group.size:
        raise ValueError("sequence parallelism: dimension 0 (%d) is not divisible by the %d "
                         "tensor-parallel ranks" % (rows, group.size))
    n = rows // group.size
    return x[group.rank * n:(group.rank + 1) * n].contiguous()


def _allgather_last(x, group):
    moved = x.detach().movedim(-1, 0).contiguous()
    return _allgather_rows(moved, group).movedim(0, -1).contiguous()


def _own_last(x, group):
    cols = x.shape[-1]
    if cols % group.size:
        raise ValueError("tensor parallelism: the last dimension (%d) is not divisible by the "
                         "%d tensor-parallel ranks" % (cols, group.size))
    n = cols // group.size
    return x[..., group.rank * n:(group.rank + 1) * n].contiguous()


def _function(name, forward, backward):
    """An autograd Function applying forward(x, group) and backward(g, group)."""
    def fwd(ctx, x, group):
        ctx.group = group
        return forward(x, group)

    def bwd(ctx, grad):
        return backward(grad, ctx.group), None

    return type(name, (torch.autograd.Function,), {"forward": staticmethod(fwd),
                                                   "backward": staticmethod(bwd)})


def _identity(x, group):
    return x.view_as(x)


_Copy = _function("CopyToTensorParallel", _identity, allreduce)
_Reduce = _function("ReduceFromTensorParallel", allreduce, _identity)
_Gather = _function("GatherFromTensorParallel", _allgather_last, _own_last)
_Scatter = _function("ScatterToTensorParallel", _own_last, _allgather_last)
_GatherSequence = _function("GatherFromSequenceParallel", _allgather_rows, _reduce_scatter_rows)
_ReduceScatterSequence = _function("ReduceScatterToSequenceParallel", _reduce_scatter_rows,
                                   _allgather_rows)
_ScatterSequence = _function("ScatterToSequenceParallel", _own_rows, _allgather_rows)


def _apply(function, x, group):
    group = group_of(group)
    return x if group is None else function.apply(x, group)


def copy_to(x, group):
    return _apply(_Copy, x, group)


def reduce_from(x, group):
    return _apply(_Reduce, x, group)


def gather_from(x, group):
    return _apply(_Gather, x, group)


def scatter_to(x, group):
    return _apply(_Scatter, x, group)


def gather_from_sequence(x, group):
    return _apply(_GatherSequence, x, group)


def reduce_scatter_to_sequence(x, group):
    return _apply(_ReduceScatterSequence, x, group)


def scatter_to_sequence(x, group):
    return _apply(_ScatterSequence, x, group)
