"""Helpers built on the collectives, as in horovod.torch.functions: bring
every rank to root's parameters, optimizer state and Python objects."""
import cloudpickle
import torch

from .. import _cohort
from ..process_sets import global_process_set
from .mpi_ops import allgather_async, broadcast_async_, synchronize


def broadcast_parameters(params, root_rank, prefix=None, process_set=global_process_set):
    """Copies root_rank's values into `params` on every rank: a model's
    state_dict() or named_parameters(), or a list of tensors or (name, tensor)."""
    if isinstance(params, dict):
        params = sorted(params.items())
    elif isinstance(params, list):
        params = [p if isinstance(p, tuple) else (None, p) for p in params]
    else:
        params = list(params)
        if params and not isinstance(params[0], tuple):
            params = [(None, p) for p in params]
    handles = []
    for i, (name, p) in enumerate(params):
        if p is None:
            continue
        if not isinstance(p, torch.Tensor):
            raise ValueError("broadcast_parameters: entry %s is a %s, not a tensor" %
                             (name or i, type(p).__name__))
        full = None if name is None else "broadcast_parameters.%s%s" % (prefix or "", name)
        handles.append(broadcast_async_(p.data if p.requires_grad else p, root_rank, full,
                                        process_set))
    for h in handles:
        synchronize(h)


def broadcast_optimizer_state(optimizer, root_rank, model=None, process_set=global_process_set):
    """Makes every rank's optimizer state (momentum buffers, Adam moments,
    steps, hyper-parameters) equal to root_rank's. The optimizers must have been
    built over the same parameters in the same order. Parameters that require
    gradients and have none get zero gradients, as after Horovod's dummy step;
    the step itself is not run (root's whole state dict is sent, so no state
    needs to exist first, and parameters and step counts stay untouched)."""
    del model  # accepted for Horovod compatibility; the state dict carries all
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state")
    _create_missing_grads(optimizer)
    state = broadcast_object(optimizer.state_dict() if _cohort.rank() == root_rank else None,
                             root_rank, "broadcast_optimizer_state", process_set)
    if _cohort.rank() != root_rank:
        optimizer.load_state_dict(state)


def _create_missing_grads(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.requires_grad and p.grad is None:
                p.grad = torch.zeros_like(p)
                if isinstance(optimizer, torch.optim.SparseAdam):
                    p.grad = p.grad.to_sparse()


def _pickled(obj):
    data = cloudpickle.dumps(obj)
    if not data:
        return torch.empty(0, dtype=torch.uint8)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """root_rank's `obj` (anything cloudpickle serializes) on every rank.
    root_rank is a global rank. Unnamed calls are named after the object's
    type, as in Horovod (so every rank passes an object of the same type)."""
    base = type(obj).__name__ if name is None else name
    is_root = _cohort.rank() == root_rank
    payload = _pickled(obj) if is_root else None
    length = torch.tensor([payload.numel() if is_root else 0], dtype=torch.int64)
    synchronize(broadcast_async_(length, root_rank, base + ".sz", process_set))
    if not is_root:
        payload = torch.empty(int(length[0]), dtype=torch.uint8)
    synchronize(broadcast_async_(payload, root_rank, base + ".t", process_set))
    if is_root:
        return obj
    return cloudpickle.loads(payload.numpy().tobytes())


def allgather_object(obj, name=None, process_set=global_process_set):
    """The list of every rank's `obj`, in rank order. Unnamed calls are named
    after the object's type, as in Horovod."""
    base = type(obj).__name__ if name is None else name
    payload = _pickled(obj)
    sizes = synchronize(allgather_async(torch.tensor([payload.numel()], dtype=torch.int64),
                                        base + ".sz", process_set))
    gathered = synchronize(allgather_async(payload, base + ".t", process_set))
    out, offset = [], 0
    for n in sizes.tolist():
        out.append(cloudpickle.loads(gathered[offset:offset + n].numpy().tobytes()))
        offset += n
    return out
