"""DistributedOptimizer, as in horovod.torch: wraps a torch optimizer so that
each gradient is averaged over the ranks before step().

A hook on every parameter's gradient accumulator starts that gradient's
allreduce as soon as backward has produced it, so communication of the last
layers overlaps the backward pass through the first ones; step() (or
synchronize()) waits for them all."""
import logging
import sys
import time
import warnings
from contextlib import contextmanager

import torch

from .. import _cohort
from ..process_sets import global_process_set, set_id
from .compression import Compression
from .host_reduction import (HostLayout, averaged, check_connected, once_per_host,
                             restore_state, sharded_per_host)
from .reducer_comm import EngineComm, Stages, drive
from .mpi_ops import (Adasum, Average, allreduce_async_, barrier, grouped_allreduce_async_,
                      sparse_allreduce_async, synchronize)


_log = logging.getLogger("cohort.torch")

# The handle of a gradient the compressing reducer has taken.
_REDUCED_BY_REDUCER = "reduced by the reducer"

# The compressing reducers' default groups: DDP's default bucket size.
_REDUCER_BUCKET_BYTES = 25 << 20

# Horovod's warning for step() after synchronize() outside skip_synchronize().
STEP_AFTER_SYNCHRONIZE = (
    "optimizer.step() called without optimizer.skip_synchronize() context after "
    "optimizer.synchronize(). This can cause training slowdown. You may want to consider using "
    "optimizer.skip_synchronize() context if you use optimizer.synchronize() in your code.")


class _DistributedOptimizer(torch.optim.Optimizer):
    def __init__(self, params, named_parameters, compression, backward_passes_per_step=1,
                 op=Average, gradient_predivide_factor=1.0, groups=None,
                 process_set=global_process_set, sparse_as_dense=False):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        self.sparse_as_dense = sparse_as_dense
        self._parameter_names = self._names_of(named_parameters)
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {p: backward_passes_per_step for p in self._parameter_names}
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.process_set = process_set
        self._handles = {}  # parameter -> (handle or None, compression context)
        self._grad_accs = []
        self._requires_update = set()
        self._synchronized = False
        self._should_synchronize = True
        self._groups = self._group_index(groups)
        self._group_ready = {}  # group index -> parameters whose gradients are ready
        # As Horovod: a rank outside the process set reduces nothing (no
        # hooks, synchronize() does nothing) and steps on its own gradients.
        self._included = _included(process_set)
        # Compression.powersgd/topk (compression.py): a group of gradients
        # goes to the reducer when backward produced them all (overlap) or
        # at synchronize(), once per host or per rank (host_reduction.py).
        self._reducer = compression if getattr(compression, "is_reducer", False) else None
        self._in_flight = []  # reducer_comm.Stages of the groups under way, in launch order
        self._deferred = []  # without overlap: groups ready, reduced at synchronize()
        if self._reducer is not None and self._included:
            self._setup_reducer(groups is None)
        if self._included and _cohort.size() > 1:
            self._register_hooks()

    def _names_of(self, named_parameters):
        params = [p for group in self.param_groups for p in group["params"]]
        if named_parameters is None:
            return {p: "allreduce.noname.%d.%d" % (i, j)
                    for i, group in enumerate(self.param_groups)
                    for j, p in enumerate(group["params"])}
        named = list(named_parameters)
        if any(not isinstance(p, tuple) for p in named):
            raise ValueError("named_parameters should be a sequence of tuples (name, parameter), "
                             "usually produced by model.named_parameters().")
        names = [k for k, _ in named]
        dups = sorted({k for k in names if names.count(k) > 1})
        if dups:
            raise ValueError("Parameter names in named_parameters must be unique. Found "
                             "duplicates: %s" % ", ".join(dups))
        named_ids = {id(v) for _, v in named}
        unnamed = [id(p) for p in params if id(p) not in named_ids]
        if unnamed:
            raise ValueError("named_parameters was specified, but one or more model parameters "
                             "were not named. Python object ids: %s" %
                             ", ".join(str(i) for i in unnamed))
        return {v: "allreduce." + k for k, v in sorted(named, key=lambda kv: kv[0])}

    def _group_index(self, groups):
        """parameter -> group number, for gradients allreduced together."""
        if groups is None:
            return None
        params = [p for group in self.param_groups for p in group["params"] if p.requires_grad]
        if isinstance(groups, int):
            if groups <= 0:
                raise ValueError("groups must be a positive number or a list of lists of "
                                 "parameters, got %d" % groups)
            per = (len(params) + groups - 1) // groups
            groups = [params[i:i + per] for i in range(0, len(params), per)]
        index = {}
        for g, members in enumerate(groups):
            for p in members:
                if p in index:
                    raise ValueError("groups: a parameter appears in more than one group")
                index[p] = g
        for p in params:  # parameters in no listed group are reduced alone
            if p not in index:
                index[p] = len(groups)
                groups.append([p])
        self._group_members = [list(m) for m in groups]
        return index

    def _setup_reducer(self, default_groups):
        """Chooses how the reducer runs (once per host, per rank, or plain
        averages on one host) and its groups: DDP-like buckets of about
        _REDUCER_BUCKET_BYTES in the order backward produces them, unless
        `groups` was given. Collective on every rank of the job (the host
        layout and its process sets) when the set is the global one."""
        reducer = self._reducer
        self._reducer_comm = EngineComm(self.process_set)
        self._layout = None
        if set_id(self.process_set) != 0 or _cohort.size() == 1:
            self._reducer_mode = "rank"
            self._layout_info = {"scope": "rank", "ranks": self._reducer_comm.size,
                                 "hosts": 1, "leader": True}
        else:
            layout = HostLayout.of_job()
            self._reducer_mode = layout.mode(reducer.scope)
            if _cohort.rank() == 0:
                _log.info("%r: %s", reducer, layout.explain(self._reducer_mode, reducer.scope))
            if self._reducer_mode in ("host", "shard"):
                self._layout = layout.connect(self._reducer_mode)
            elif self._reducer_mode == "dense":
                warnings.warn("%r: every rank is on one host, so gradients are averaged "
                              "uncompressed over shared memory (compressing would only cost "
                              "time and accuracy); scope='rank' compresses anyway" % (reducer,))
            self._layout_info = layout.describe(self._reducer_mode)
        if default_groups:
            self._groups = self._group_index(_buckets(
                [p for group in self.param_groups for p in group["params"] if p.requires_grad],
                _REDUCER_BUCKET_BYTES))

    def _register_hooks(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    # No zero gradient is made here (as Horovod since 0.22): a
                    # dense one would turn an nn.Embedding(sparse=True)'s
                    # gradient dense. A gradient still missing at step() is
                    # reduced as zeros (_allreduce_grad_async).
                    self._requires_update.add(p)
                    grad_acc = p.expand_as(p).grad_fn.next_functions[0][0]
                    grad_acc.register_hook(self._make_hook(p))
                    self._grad_accs.append(grad_acc)

    def _scale_factors(self):
        # The engine divides Average by the set size after the postscale; the
        # predivide factor moves part of that division before the sum.
        if self.op == Average:
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _allreduce_grad_async(self, p):
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        grad = p.grad
        if grad.is_sparse:
            if not self.sparse_as_dense:
                # Horovod's way: indices and values allgathered, no compression.
                handle = sparse_allreduce_async(grad, self._parameter_names[p], self.op,
                                                self.process_set)
                return handle, (None, None)
            # Reduced dense; p.grad stays sparse (made sparse again at
            # synchronize, as Horovod does), so sparse optimizers still work.
            grad = grad.to_dense()
        compressed, ctx = self._compression.compress(grad)
        pre, post = self._scale_factors()
        handle = allreduce_async_(compressed, name=self._parameter_names[p], op=self.op,
                                  prescale_factor=pre, postscale_factor=post,
                                  process_set=self.process_set)
        return handle, (compressed, ctx)

    def _allreduce_group_async(self, g):
        members = self._group_members[g]
        for p in members:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            elif p.grad.is_sparse:  # grouped allreduce is dense only
                p.grad = p.grad.to_dense()
        compressed = [self._compression.compress(p.grad) for p in members]
        pre, post = self._scale_factors()
        handle = grouped_allreduce_async_(
            [c for c, _ in compressed], name="allreduce.group.%d.%s" % (
                g, self._parameter_names[members[0]]), op=self.op, prescale_factor=pre,
            postscale_factor=post, process_set=self.process_set)
        for p, c in zip(members, compressed):
            self._handles[p] = (handle, c)

    def _make_hook(self, p):
        def hook(*ignore):
            for stages in self._in_flight:  # earlier groups go on as far as they can
                stages.progress()
            if p in self._handles and self._handles[p][0] is not None:
                if self._allreduce_delay[p] <= 0:
                    raise AssertionError(
                        "Gradients were computed more than backward_passes_per_step times "
                        "before call to step(). Increase backward_passes_per_step to "
                        "accumulate gradients locally.")
            self._allreduce_delay[p] -= 1
            self._handles[p] = (None, None)
            if self._allreduce_delay[p] == 0:
                self._submit(p)
        return hook

    def _submit(self, p):
        if self._reducer is not None:
            self._handles[p] = (_REDUCED_BY_REDUCER, (None, None))
        if self._groups is None:
            self._handles[p] = self._allreduce_grad_async(p)
            return
        g = self._groups[p]
        ready = self._group_ready.setdefault(g, set())
        ready.add(p)
        if len(ready) == len(self._group_members[g]):
            del self._group_ready[g]
            if self._reducer is not None:
                self._launch_reduction(g)
            else:
                self._allreduce_group_async(g)

    def _launch_reduction(self, g):
        """Starts (overlap) or queues group g's compressed reduction."""
        members = self._group_members[g]
        for p in members:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            elif p.grad.is_sparse:
                p.grad = p.grad.to_dense()
            elif not p.grad.is_contiguous():
                p.grad = p.grad.contiguous()
        names, grads, tag = [self._parameter_names[p] for p in members], \
            [p.grad for p in members], ".g%d" % g
        mode = self._reducer_mode
        if mode in ("host", "shard"):
            check_connected(self._layout, "DistributedOptimizer: %r" % (self._reducer,),
                            "optimizer")
        if mode == "shard":
            stages = sharded_per_host(self._reducer, self._layout, names, grads, tag)
        elif mode == "host":
            stages = once_per_host(self._reducer, self._layout, names, grads, tag)
        elif mode == "dense":
            stages = averaged(self._reducer, self._reducer_comm, names, grads, tag)
        else:
            stages = self._reducer.stages(names, grads, self._reducer_comm, tag)
        if self._reducer.overlap:
            self._in_flight.append(Stages(stages))
        else:
            self._deferred.append(stages)

    def synchronize(self):
        """Waits for every gradient's allreduce (starting those whose hooks
        did not fire) and puts the averaged gradients into p.grad."""
        if not self._included:
            self._synchronized = True
            return
        try:
            if self._reducer is not None:
                self._reduce_compressed()
            else:
                self._start_missing()
                self._wait_all()
        except BaseException:
            self._drop_pending()  # a failed step leaves nothing half-done behind
            raise
        self._synchronized = True

    def _start_missing(self):
        for p in self._requires_update - set(self._handles):
            self._handles[p] = (None, None)
        for p in list(self._handles):
            if self._handles[p][0] is None:
                if self._groups is None:
                    self._handles[p] = self._allreduce_grad_async(p)
                elif p not in self._group_ready.get(self._groups[p], ()):
                    self._submit(p)
        for g in list(self._group_ready):  # groups some of whose gradients never came
            del self._group_ready[g]
            self._allreduce_group_async(g)

    def _reduce_compressed(self):
        """Finishes every group's compressed reduction: the groups whose
        gradients did not all come from backward start now (missing ones as
        zeros, in name order); then each group in the order it started."""
        if _cohort.size() > 1:
            for p in sorted(self._requires_update, key=lambda p: self._parameter_names[p]):
                if self._handles.get(p, (None, None))[0] is None:
                    self._submit(p)
            for stages in self._in_flight:
                stages.finish()
            for stages in self._deferred:
                drive(stages)
            if self._reducer_mode in ("host", "shard"):
                # The last collectives ran within each host: without this, a
                # rank could return and shut the job down (which ends every
                # rank's engine) while another host still broadcasts.
                barrier()
            self._reducer.end_step()
        elif hasattr(self._reducer, "apply_momentum"):  # one rank: nothing to reduce
            params = [p for group in self.param_groups for p in group["params"]
                      if p.grad is not None]  # (no hooks on one rank: _requires_update is empty)
            self._reducer.apply_momentum([self._parameter_names[p] for p in params],
                                         [p.grad for p in params])
        self._in_flight, self._deferred = [], []
        for p in self._requires_update:
            self._allreduce_delay[p] = self.backward_passes_per_step
        self._handles.clear()

    def close(self):
        """Removes the process sets that compressing once per host added
        (host_reduction.HostLayout.close). Collective: every rank of the job
        closes its optimizers in the same order, between steps; afterwards
        the optimizer cannot step. The sets are not removed when the
        optimizer is garbage collected (that happens at different times on
        different ranks); they end with the runtime at shutdown(), where
        close() then sends nothing. Does nothing for other optimizers or
        when called again."""
        layout = getattr(self, "_layout", None)
        if layout is not None:
            self._drop_pending()
            self._layout = None
            layout.close()

    def state_dict(self):
        """The wrapped optimizer's state, plus the compressing reducer's
        (errors, warm-start matrices, step count) under "cohort_compression"."""
        state = super(self.__class__, self).state_dict()
        if self._reducer is not None:
            state["cohort_compression"] = dict(self._reducer.state_dict(),
                                               layout=getattr(self, "_layout_info", None))
        return state

    def load_state_dict(self, state_dict):
        if "cohort_compression" in state_dict:
            if self._reducer is not None:
                state = state_dict["cohort_compression"]
                if self._included:
                    state = restore_state(self._reducer, state, self._layout_info)
                self._reducer.load_state_dict(state)
            state_dict = {k: v for k, v in state_dict.items() if k != "cohort_compression"}
        return super(self.__class__, self).load_state_dict(state_dict)

    def _drop_pending(self):
        """Forgets gradients whose allreduce is under way, e.g. after the job
        failed mid-step (cohort.torch.elastic restores and resets)."""
        _forget_reductions(self)
        self._group_ready.clear()
        self._in_flight, self._deferred = [], []

    def _wait_all(self):
        for p, (handle, (compressed, ctx)) in list(self._handles.items()):
            out = synchronize(handle)
            self._allreduce_delay[p] = self.backward_passes_per_step
            if compressed is None:  # a sparse gradient: the result is a new tensor
                p.grad = out
            elif p.grad.is_sparse:  # sparse_as_dense: reduced dense, sparse again
                p.grad = self._compression.decompress(compressed, ctx).to_sparse()
            else:
                p.grad.set_(self._compression.decompress(compressed, ctx))
        self._handles.clear()

    @contextmanager
    def skip_synchronize(self):
        """step() inside this block does not synchronize (call synchronize() first)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn(STEP_AFTER_SYNCHRONIZE)
            waited = time.perf_counter()
            self.synchronize()
            _report_step_to_tracking(self._requires_update, time.perf_counter() - waited)
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, set_to_none=False):
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                                 "before optimizer.step() or optimizer.synchronize(). This is "
                                 "prohibited as it can cause a race condition.")
        return super(self.__class__, self).zero_grad(set_to_none=set_to_none)


def _forget_reductions(opt):
    """Drops `opt`'s reductions in flight and the count of backward passes
    toward the next one, so the next backward starts afresh: what either
    optimizer does when cohort.torch.elastic restores it after a failed round
    (otherwise its hooks would find the old handles and refuse the gradient)."""
    opt._handles.clear()
    for p in opt._requires_update:
        opt._allreduce_delay[p] = opt.backward_passes_per_step


def _buckets(params, cap_bytes):
    """`params` in groups of about `cap_bytes`, last parameters first (the
    order backward produces their gradients in), as DDP's buckets."""
    groups, size = [], 0
    for p in reversed(params):
        nbytes = p.numel() * p.element_size()
        if not groups or (size > 0 and size + nbytes > cap_bytes):
            groups.append([])
            size = 0
        groups[-1].append(p)
        size += nbytes
    return groups


def _report_step_to_tracking(params, wait_s):
    """Logs the step's wait and reduced bytes to cohort.track's active run, if any."""
    track = sys.modules.get("cohort.track")
    run = track.active_run() if track else None
    if run is not None:
        reduced = sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None)
        run._log_engine_step(wait_s, reduced, _cohort.engine_stats())


def _included(process_set):
    """Whether this rank is a member of `process_set`."""
    ps = set_id(process_set)
    return not ps or _cohort.process_set_rank(ps) >= 0


class _DistributedAdasumOptimizer(torch.optim.Optimizer):
    """Horovod's delta optimizer for op=Adasum: when a parameter's gradient is
    ready, the wrapped optimizer steps that parameter alone, and the change it
    made (the delta) is what is combined over the ranks with Adasum; step()
    then sets each parameter to its value before the local step plus the
    combined delta."""

    def __init__(self, params, named_parameters, compression, backward_passes_per_step=1):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        self._parameter_names = _DistributedOptimizer._names_of(self, named_parameters)
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {p: backward_passes_per_step for p in self._parameter_names}
        self._handles = {}  # parameter -> (handle or None, compression context)
        self._starts = {p: torch.zeros_like(p, requires_grad=False)
                        for p in self._parameter_names}
        self._requires_update = set()
        self._grad_accs = []
        self._in_flight = []  # what the shared hook advances: no compressing reducer here
        _DistributedOptimizer._register_hooks(self)

    def _allreduce_grad_async(self, p):
        # Step the wrapped optimizer on p alone: delta = p after - p before.
        stashed = [group["params"] for group in self.param_groups]
        for group in self.param_groups:
            group["params"] = [p] if any(p is q for q in group["params"]) else []
        start = self._starts[p]
        start.copy_(p.detach())
        try:
            super(self.__class__, self).step()
        finally:
            for group, params in zip(self.param_groups, stashed):
                group["params"] = params
        with torch.no_grad():
            p.sub_(start)
        compressed, ctx = self._compression.compress(p.detach())
        return allreduce_async_(compressed, name=self._parameter_names[p], op=Adasum), \
            (compressed, ctx)

    def _submit(self, p):
        self._handles[p] = self._allreduce_grad_async(p)

    _make_hook = _DistributedOptimizer._make_hook  # the same accumulation rules
    _drop_pending = _forget_reductions  # called by elastic's restore(), as for the other

    def synchronize(self):
        pass  # step() does the waiting, as in Horovod

    @contextmanager
    def skip_synchronize(self):
        raise AssertionError("Skipping synchronization is not supported when using Adasum "
                             "optimizer.")

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for p in self._requires_update:
            if self._handles.get(p, (None, None))[0] is None:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, (compressed, ctx)) in self._handles.items():
            synchronize(handle)
            delta = self._compression.decompress(compressed, ctx)
            with torch.no_grad():
                p.copy_(self._starts[p] + delta.to(p.dtype))
            self._allreduce_delay[p] = self.backward_passes_per_step
        self._handles.clear()
        return loss


def _check_momentum_applied_once(optimizer, compression):
    """A reducer that applies the momentum itself (top-k's momentum
    correction) with an optimizer that applies it again would train with
    momentum squared: refused, naming the group."""
    if not getattr(compression, "momentum", 0):
        return
    for i, group in enumerate(optimizer.param_groups):
        if group.get("momentum", 0):
            raise ValueError(
                "DistributedOptimizer: %r applies the momentum before sparsifying (momentum "
                "correction), so the optimizer must have none; param group %d has momentum=%g "
                "(build it with momentum=0)" % (compression, i, group["momentum"]))
        if "betas" in group:
            raise ValueError(
                "DistributedOptimizer: %r applies SGD's momentum before sparsifying (momentum "
                "correction); param group %d has betas, an Adam-like optimizer's own moments "
                "(use momentum=0 in the compression with it)" % (compression, i))


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=global_process_set):
    """An optimizer of optimizer's class whose step() first averages (op)
    each gradient over the ranks of process_set. `groups`: a number of groups
    or a list of lists of parameters whose gradients are reduced together.
    Sparse gradients are allgathered (Horovod's way) unless sparse_as_dense.
    op=Adasum gives Horovod's delta optimizer (_DistributedAdasumOptimizer)."""
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups` and will be removed",
                      DeprecationWarning)
        if groups is None:
            groups = num_groups
    if getattr(compression, "is_reducer", False):
        if op != Average or gradient_predivide_factor != 1.0:
            raise ValueError("DistributedOptimizer: %r averages gradients (op=Average, "
                             "gradient_predivide_factor=1.0) only" % (compression,))
        if compression.scope in ("host", "leader") and set_id(process_set) != 0:
            raise ValueError("DistributedOptimizer: %r with scope=%r works on the global "
                             "process set only" % (compression, compression.scope))
        _check_momentum_applied_once(optimizer, compression)
    if backward_passes_per_step < 1:
        raise ValueError("backward_passes_per_step must be at least 1, got %d" %
                         backward_passes_per_step)
    if op == Adasum and _cohort.size() > 1:
        if process_set is not global_process_set and set_id(process_set) != 0:
            raise ValueError("DistributedOptimizer: op=Adasum works on the global process set "
                             "only (as in Horovod)")
        cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
                   dict(_DistributedAdasumOptimizer.__dict__))
        return cls(optimizer.param_groups, named_parameters, compression,
                   backward_passes_per_step)
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
               op, gradient_predivide_factor, groups, process_set, sparse_as_dense)
