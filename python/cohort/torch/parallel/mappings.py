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


def _share(n, group, what):
    """Rows per rank of `n`, or a ValueError naming the dimension."""
    if n % group.size:
        raise ValueError("%s (%d) is not divisible by the %d tensor-parallel ranks" % (
            what, n, group.size))
    return n // group.size


_SEQUENCE = "sequence parallelism: dimension 0"


def _reduce_scatter_rows(x, group):
    _share(x.shape[0], group, _SEQUENCE)
    return _ops.reducescatter_async(KIND, x.detach().contiguous(), None, _ops.Sum, (),
                                    set_id(group.process_set)).wait()


def _own_rows(x, group):
    n = _share(x.shape[0], group, _SEQUENCE)
    return x[group.rank * n:(group.rank + 1) * n].contiguous()


def _allgather_last(x, group):
    moved = x.detach().movedim(-1, 0).contiguous()
    return _allgather_rows(moved, group).movedim(0, -1).contiguous()


def _own_last(x, group):
    n = _share(x.shape[-1], group, "tensor parallelism: the last dimension")
    return x[..., group.rank * n:(group.rank + 1) * n].contiguous()


def _identity(x, group):
    return x.view_as(x)


def _mapping(name, forward, backward, doc):
    """The public function `name`: an autograd Function applying
    forward(x, group) and backward(grad, group), the identity for a group of
    one rank (or None)."""
    def fwd(ctx, x, group):
        ctx.group = group
        return forward(x, group)

    def bwd(ctx, grad):
        return backward(grad, ctx.group), None

    function = type(name, (torch.autograd.Function,), {"forward": staticmethod(fwd),
                                                       "backward": staticmethod(bwd)})

    def apply(x, group):
        group = group_of(group)
        return x if group is None else function.apply(x, group)

    apply.__name__, apply.__qualname__, apply.__doc__ = name, name, doc
    return apply


copy_to = _mapping("copy_to", _identity, allreduce,
                   "f: x unchanged; its gradient summed over the group.")
reduce_from = _mapping("reduce_from", allreduce, _identity,
                       "g: x summed over the group; its gradient unchanged.")
gather_from = _mapping("gather_from", _allgather_last, _own_last,
                       "The ranks' x joined along the last dimension; the gradient's slice.")
scatter_to = _mapping("scatter_to", _own_last, _allgather_last,
                      "This rank's slice of x's last dimension; the gradients joined.")
gather_from_sequence = _mapping("gather_from_sequence", _allgather_rows, _reduce_scatter_rows,
                                "The ranks' x joined along dim 0 (the sequence); the gradient "
                                "reduce-scattered.")
reduce_scatter_to_sequence = _mapping("reduce_scatter_to_sequence", _reduce_scatter_rows,
                                      _allgather_rows,
                                      "x summed over the group, this rank keeping its rows of "
                                      "dim 0; the gradients joined.")
scatter_to_sequence = _mapping("scatter_to_sequence", _own_rows, _allgather_rows,
                               "This rank's rows of x's dim 0; the gradients joined.")
