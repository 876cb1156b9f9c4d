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
it lands in. state.state_dict()/load_state_dict() save and restore them.

Per rank by default (scope "auto" or "rank": what torch's own hooks do).
scope="host" or "leader" compresses once per host (host_reduction.py), on
the "cohort" backend's default group only: there the job's host layout and
process sets are cohort's (a gloo group has neither)."""
import logging

import torch

from .. import _cohort
from .compression import Compression  # noqa: F401  (Compression.powersgd / .topk)
from .host_reduction import (HostLayout, averaged, check_connected, once_per_host,
                             restore_state, sharded_per_host)
from .reducer_comm import C10dComm, EngineComm, drive


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
        self.mode, self.layout = "rank", None
        if reducer.scope in ("host", "leader"):
            self._connect_hosts(reducer.scope)

    def _connect_hosts(self, scope):
        """Once per host: the job's layout and process sets (collective:
        every rank makes its CompressionState at the same point)."""
        import torch.distributed as dist
        backend = dist.get_backend(self.process_group)
        if backend != "cohort" or dist.get_world_size(self.process_group) != _cohort.size():
            raise ValueError(
                "CompressionState: %r with scope=%r needs the 'cohort' backend's default group "
                "(the job's hosts and process sets are cohort's); got a %s group of %d ranks"
                % (self.reducer, scope, backend, dist.get_world_size(self.process_group)))
        layout = HostLayout.of_job()
        self.mode = layout.mode(scope)
        if _cohort.rank() == 0:
            logging.getLogger("cohort.torch").info("%r (DDP hook): %s", self.reducer,
                                                   layout.explain(self.mode, scope))
        if self.mode in ("host", "shard"):
            self.layout = layout.connect(self.mode)
        self._layout_info = layout.describe(self.mode)

    def close(self):
        """Removes the process sets of once per host (collective, as
        DistributedOptimizer.close())."""
        if self.layout is not None:
            self.layout, layout = None, self.layout
            layout.close()

    def comm(self):
        if self._comm is None:
            self._comm = C10dComm(self.process_group)
        return self._comm

    def state_dict(self):
        """The reducer's state; once per host with the layout it was made
        in (as DistributedOptimizer's "cohort_compression")."""
        state = self.reducer.state_dict()
        if self.mode != "rank":
            state["layout"] = self._layout_info
        return state

    def load_state_dict(self, state):
        """As DistributedOptimizer's: once per host, errors saved in
        another layout or share are left out with a warning."""
        if self.mode != "rank":
            state = restore_state(self.reducer, state, self._layout_info)
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
    if state.mode == "rank":
        state.reducer.reduce(names, grads, state.comm(), end_of_step=bucket.is_last())
    else:
        _reduce_once_per_host(state, bucket, names, grads)
    future = torch.futures.Future()
    future.set_result(buffer)
    return future


def _reduce_once_per_host(state, bucket, names, grads):
    """A bucket once per host (or averaged, on one host) over cohort's engine."""
    if state.mode in ("host", "shard"):
        check_connected(state.layout, "compression_hook: %r" % (state.reducer,),
                        "CompressionState")
    tag = ".b%d" % bucket.index()
    if state.mode == "shard":
        drive(sharded_per_host(state.reducer, state.layout, names, grads, tag))
    elif state.mode == "host":
        drive(once_per_host(state.reducer, state.layout, names, grads, tag))
    else:
        drive(averaged(state.reducer, EngineComm(None), names, grads, tag))
    if bucket.is_last():
        if state.mode != "dense":
            from .mpi_ops import barrier
            barrier()  # as DistributedOptimizer: no rank leaves while a host still gathers
        state.reducer.end_step()
