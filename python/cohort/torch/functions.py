"""Helpers built on the collectives, as in horovod.torch.functions: bring
every rank to root's parameters, optimizer state and Python objects."""
import io

import cloudpickle
import torch

from .. import _ops
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
    built over the same parameters in the same order."""
    del model  # accepted for Horovod compatibility; the state dict carries all
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state")
    state = broadcast_object(optimizer.state_dict() if _rank_in(process_set) == root_rank
                             else None, root_rank, "broadcast_optimizer_state", process_set)
    if _rank_in(process_set) != root_rank:
        optimizer.load_state_dict(state)


def _rank_in(process_set):
    from .. import _cohort
    from ..process_sets import set_id
    return _cohort.process_set_rank(set_id(process_set))


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """root_rank's `obj` (anything cloudpickle serializes) on every rank."""
    base = _ops.names.make("broadcast_object", name)
    if _rank_in(process_set) == root_rank:
        buf = io.BytesIO()
        cloudpickle.dump(obj, buf)
        payload = torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8) \
            if buf.getbuffer().nbytes else torch.empty(0, dtype=torch.uint8)
        length = torch.tensor([payload.numel()], dtype=torch.int64)
    else:
        length = torch.zeros(1, dtype=torch.int64)
    synchronize(broadcast_async_(length, root_rank, base + ".size", process_set))
    if _rank_in(process_set) != root_rank:
        payload = torch.empty(int(length[0]), dtype=torch.uint8)
    synchronize(broadcast_async_(payload, root_rank, base + ".data", process_set))
    if _rank_in(process_set) == root_rank:
        return obj
    return cloudpickle.loads(payload.numpy().tobytes())


def allgather_object(obj, name=None, process_set=global_process_set):
    """The list of every rank's `obj`, in rank order."""
    base = _ops.names.make("allgather_object", name)
    data = cloudpickle.dumps(obj)
    payload = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    sizes = synchronize(allgather_async(torch.tensor([len(data)], dtype=torch.int64),
                                        base + ".sizes", process_set))
    gathered = synchronize(allgather_async(payload, base + ".data", process_set))
    out, offset = [], 0
    for n in sizes.tolist():
        out.append(cloudpickle.loads(gathered[offset:offset + n].numpy().tobytes()))
        offset += n
    return out
