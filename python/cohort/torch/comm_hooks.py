"""cohort's gradient compression as DDP communication hooks, for a
DistributedDataParallel model on any torch.distributed backend (the
"cohort" one of cohort.torch.distributed, or gloo):

    from cohort.torch import comm_hooks
    state = comm_hooks.CompressionState(comm_hooks.Compression.powersgd(rank=2),
                                        model.named_parameters())
    ddp_model.register_comm_hook(state, comm_hooks.compression_hook)

The hook averages each bucket's gradients with the same reducer
DistributedOptimizer(compression=...) uses (powersgd.py, topk.py), per
parameter, so a parameter's error and warm start follow it whatever bucket
it lands in. state.state_dict()/load_state_dict() save and restore them."""
import torch

from .compression import Compression  # noqa: F401  (Compression.powersgd / .topk)
from .reducer_comm import C10dComm


class CompressionState:
    """What compression_hook keeps across steps: the reducer (one
    Compression.powersgd(...) or Compression.topk(...)), the process group,
    and the parameters' names (the reducer's keys)."""

    def __init__(self, reducer, named_parameters, process_group=None):
        if not getattr(reducer, "is_reducer", False):
            raise ValueError("CompressionState: expected Compression.powersgd(...) or "
                             "Compression.topk(...), got %r" % (reducer,))
        self.reducer = reducer
        self.process_group = process_group
        self.names = {id(p): name for name, p in named_parameters}
        self._comm = None

    def comm(self):
        if self._comm is None:
            self._comm = C10dComm(self.process_group)
        return self._comm

    def state_dict(self):
        return self.reducer.state_dict()

    def load_state_dict(self, state):
        self.reducer.load_state_dict(state)


def _bucket_parameters(bucket):
    # torch 1.13: GradBucket.parameters(); older: get_model_params_for_bucket().
    if hasattr(bucket, "parameters"):
        return bucket.parameters()
    return bucket.get_model_params_for_bucket()


def compression_hook(state, bucket):
    """DDP comm hook: the bucket's gradients averaged over the process
    group through state.reducer, in place; returns a completed future."""
    buffer = bucket.buffer()
    names, grads, at = [], [], 0
    for p in _bucket_parameters(bucket):
        names.append(state.names.get(id(p), "param.%d" % id(p)))
        grads.append(buffer[at:at + p.numel()].view(p.shape))
        at += p.numel()
    state.reducer.reduce(names, grads, state.comm(), end_of_step=bucket.is_last())
    future = torch.futures.Future()
    future.set_result(buffer)
    return future
