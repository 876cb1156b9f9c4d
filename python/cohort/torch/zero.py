"""ZeroRedundancyOptimizer: ZeRO stages 1 and 2 on cohort's collectives, with
the arguments and state-dict format of torch.distributed.optim's class.

Every rank owns whole parameters (as in torch); `.optim` is the local
optimizer over the owned ones, so optimizer state is sharded (stage 1).
Unlike torch's class it also averages the gradients itself, so no
DistributedDataParallel is needed around the model:

- stage 1: each bucket of gradients is allreduced as soon as backward has
  produced it (every rank keeps the full averaged gradient);
- stage 2: each bucket is reduce-scattered instead, so a rank receives (and
  keeps) only the averaged gradients of the parameters it owns; the others'
  gradients are freed as soon as the bucket is sent.

After the local step, every rank's updated parameters are allgathered.

A bucket is a run of consecutive parameters in backward order (reverse
registration order) laid out as one padded segment per rank, rank r's segment
holding the parameters rank r owns; a reduce-scatter or allgather of the
bucket therefore moves each parameter to or from its owner. Ownership is
decided bucket by bucket, largest parameter first, to the rank with the
smallest segment (ties: the least total so far), which keeps the padding
small and the ranks' totals balanced."""
import copy
import zlib
from itertools import chain

import torch

from .. import _cohort
from ..process_sets import global_process_set, set_id, set_size
from .functions import broadcast_object
from .mpi_ops import (Average, allgather_async, grouped_allreduce_async_, reducescatter_async,
                      synchronize)


# Parameter-sync allgathers in flight at once: bounds the transient copy of
# the parameters to two buckets instead of the whole model.
_SYNC_WINDOW = 2


def _op_prefix(kind, process_set, signature):
    """A name prefix for an object's collectives, equal on every rank of the
    set without a counter (members of a subset would count differently from
    the other ranks): the set and a digest of the parameters' names and
    shapes."""
    digest = zlib.crc32(repr([(str(n), tuple(s)) for n, s in signature]).encode())
    return "%s.%d.%08x" % (kind, set_id(process_set), digest)


def _place_in(process_set, what):
    """(size of the set, this rank's position in it); raises for a non-member."""
    rank = _cohort.process_set_rank(set_id(process_set))
    if rank < 0:
        raise ValueError("%s: this rank is not in the process set" % what)
    return set_size(process_set), rank


class _Bucket:
    """Parameters reduced and gathered together, one padded segment per rank."""

    def __init__(self, params, owners, world_size):
        self.params = params
        self.owner = owners  # parameter -> rank
        self.offset = {}  # parameter -> offset inside its owner's segment
        used = [0] * world_size
        for p in params:
            self.offset[p] = used[owners[p]]
            used[owners[p]] += p.numel()
        self.segment = max(max(used), 1)
        self.world_size = world_size

    def flat_grads(self):
        """Every parameter's gradient (zeros where none) at its place in the bucket."""
        flat = torch.zeros(self.segment * self.world_size, dtype=self.params[0].dtype)
        for p in self.params:
            if p.grad is not None:
                start = self.owner[p] * self.segment + self.offset[p]
                flat[start:start + p.numel()].copy_(p.grad.reshape(-1))
        return flat

    def owned(self, rank):
        return [p for p in self.params if self.owner[p] == rank]

    def segment_of(self, rank):
        """This rank's owned parameters, packed into its segment."""
        seg = torch.zeros(self.segment, dtype=self.params[0].dtype)
        for p in self.owned(rank):
            seg[self.offset[p]:self.offset[p] + p.numel()].copy_(p.detach().reshape(-1))
        return seg

    def scatter_params(self, gathered, rank):
        """Copies the other ranks' parameters out of an allgathered bucket."""
        with torch.no_grad():
            for p in self.params:
                if self.owner[p] != rank:
                    start = self.owner[p] * self.segment + self.offset[p]
                    p.copy_(gathered[start:start + p.numel()].view_as(p))


def _partition_group(params, sizes, bucket_numel):
    """Buckets of one parameter group (backward order) and each parameter's
    owner; `sizes` (elements owned per rank) carries across groups."""
    world_size = len(sizes)
    buckets, owners, run, run_numel, largest = [], {}, [], 0, 0
    for p in reversed(params):
        run.append(p)
        run_numel += p.numel()
        largest = max(largest, p.numel())
        # At least size x the largest member: room for the others' segments
        # to fill up to the largest, so padding stays a small part.
        if run_numel >= max(bucket_numel, world_size * largest):
            buckets.append(run)
            run, run_numel, largest = [], 0, 0
    if run:
        buckets.append(run)
    result = []
    for members in buckets:
        segment = [0] * world_size
        for p in sorted(members, key=lambda t: t.numel(), reverse=True):
            rank = min(range(world_size), key=lambda r: (segment[r], sizes[r], r))
            owners[p] = rank
            segment[rank] += p.numel()
            sizes[rank] += p.numel()
        result.append(_Bucket(members, owners, world_size))
    return result, owners


class ZeroRedundancyOptimizer(torch.optim.Optimizer):
    """Wraps `optimizer_class` so that each rank keeps the optimizer state of
    about 1/size of the parameters, and averages the gradients itself.

    Arguments as torch.distributed.optim.ZeroRedundancyOptimizer's, plus:
      stage: 1 (gradients allreduced) or 2 (gradients reduce-scattered: each
        rank keeps only the gradients of the parameters it owns);
      bucket_cap_mb: size of a gradient bucket (default 25 MB);
      process_set: the cohort process set whose ranks share the work.
    `process_group` must be None (cohort does not use torch.distributed) and
    `overlap_with_ddp` False (gradients are reduced here, overlapping with
    backward); `parameters_as_bucket_view` is accepted and has no effect:
    communication always goes through buckets and param.data stays intact."""

    def __init__(self, params, optimizer_class, process_group=None,
                 parameters_as_bucket_view=False, overlap_with_ddp=False, stage=1,
                 bucket_cap_mb=25, process_set=global_process_set, **defaults):
        if process_group is not None:
            raise ValueError("ZeroRedundancyOptimizer: process_group is a torch.distributed "
                             "group; cohort's takes process_set=")
        if overlap_with_ddp:
            raise ValueError("ZeroRedundancyOptimizer: overlap_with_ddp is not needed: cohort's "
                             "optimizer reduces gradients itself during backward (no DDP)")
        if stage not in (1, 2):
            raise ValueError("ZeroRedundancyOptimizer: stage must be 1 or 2, got %r (stage 3 is "
                             "cohort.torch.FullyShardedDataParallel)" % (stage,))
        if not bucket_cap_mb > 0:
            raise ValueError("ZeroRedundancyOptimizer: bucket_cap_mb must be positive, got %r" %
                             (bucket_cap_mb,))
        params = self._verify_and_init_params(params)
        self._verify_same_dense_param_type()
        self.initialized = False
        super().__init__(params, defaults)
        self.stage = stage
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self.process_set = process_set
        self.world_size, self.rank = _place_in(process_set, "ZeroRedundancyOptimizer")
        self._bucket_numel = max(1, int(bucket_cap_mb * 2**20) //
                                 self._all_params[0].element_size())
        self._name = _op_prefix("zero", process_set, [(n, p.shape) for n, p in
                                                       enumerate(self._all_params)])
        self._sizes = [0] * self.world_size
        self._buckets, self._owner, self._partition = [], {}, [[] for _ in
                                                               range(self.world_size)]
        for group in self.param_groups:
            self._partition_new_group(group)
        self._optim_defaults = defaults
        self.optim = optimizer_class(self._partition[self.rank], **defaults)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        self._all_state_dicts = []
        self._pending = {}  # bucket index -> handle of its reduction in flight
        self._reduced = set()  # buckets whose reduction started since the last step
        self._fired = {}  # bucket index -> parameters whose gradient is ready
        self._grad_accs = {}
        self._register_hooks()
        self.initialized = True

    # ---- checks, as torch's ----

    def _verify_and_init_params(self, params):
        if isinstance(params, torch.Tensor):
            raise TypeError("`params` argument should be an iterable of Tensors, but got %s" %
                            torch.typename(params))
        try:
            all_params = list(params)
        except TypeError:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts, but "
                            "got %s" % torch.typename(params))
        if not all_params:
            raise ValueError("ZeroRedundancyOptimizer got an empty parameter list")
        if all(isinstance(p, torch.Tensor) for p in all_params):
            self._all_params = all_params
        elif all(isinstance(p, dict) for p in all_params):
            self._all_params = []
            for group in all_params:
                if "params" not in group:
                    raise ValueError("Each parameter group passed-in via `params` must have a "
                                     "'params' key mapping to the parameters in the group")
                self._all_params.extend(group["params"])
        else:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts")
        return all_params

    def _verify_same_dense_param_type(self):
        typename = torch.typename(self._all_params[0])
        if self._all_params[0].is_sparse:
            raise ValueError("ZeroRedundancyOptimizer only supports using the same dense type "
                             "for all parameters but got %s" % typename)
        for p in self._all_params[1:]:
            if torch.typename(p) != typename:
                raise ValueError("ZeroRedundancyOptimizer only supports using the same dense "
                                 "type for all parameters but got both %s and %s" %
                                 (typename, torch.typename(p)))

    # ---- partition ----

    def _partition_new_group(self, group):
        """Assigns a (new, last) parameter group's parameters to ranks; earlier
        groups keep their owners."""
        buckets, owners = _partition_group(list(group["params"]), self._sizes,
                                           self._bucket_numel)
        self._buckets.extend(buckets)
        self._owner.update(owners)
        for rank in range(self.world_size):
            part = copy.copy(group)
            part["params"] = [p for p in group["params"] if owners[p] == rank]
            self._partition[rank].append(part)

    def _partition_parameters(self):
        """Per rank, its parameter groups (torch's private method of this name)."""
        return self._partition

    @property
    def _param_to_rank(self):
        return self._owner

    @property
    def _index_to_param(self):
        return list(chain(*(g["params"] for g in self.param_groups)))

    @property
    def _param_to_index(self):
        return {p: i for i, p in enumerate(self._index_to_param)}

    def add_param_group(self, param_group):
        """Adds a group on every rank (call it on all ranks): its parameters
        are partitioned; the earlier groups' owners do not change."""
        super().add_param_group(param_group)
        if not self.initialized:
            return
        self._partition_new_group(self.param_groups[-1])
        mine = self._partition[self.rank][-1]
        self.optim.add_param_group(mine)
        self._register_hooks()

    # ---- gradient reduction ----

    def _register_hooks(self):
        if self.world_size == 1:
            return
        for index, bucket in enumerate(self._buckets):
            for p in bucket.params:
                if p.requires_grad and p not in self._grad_accs:
                    acc = p.expand_as(p).grad_fn.next_functions[0][0]
                    acc.register_hook(self._make_hook(p, index))
                    self._grad_accs[p] = acc

    def _make_hook(self, p, index):
        def hook(*ignore):
            if index in self._reduced:
                raise RuntimeError("ZeroRedundancyOptimizer: a gradient was computed twice "
                                   "before step(); accumulate gradients with one backward "
                                   "per step")
            ready = self._fired.setdefault(index, set())
            ready.add(p)
            if all(q in ready for q in self._buckets[index].params if q.requires_grad):
                self._reduce(index)
        return hook

    def _reduce(self, index):
        """Starts bucket `index`'s gradient reduction."""
        self._fired.pop(index, None)
        self._reduced.add(index)
        bucket = self._buckets[index]
        name = "%s.grad.%d" % (self._name, index)
        if self.stage == 1:
            for p in bucket.params:
                if p.requires_grad and p.grad is None:
                    p.grad = torch.zeros_like(p)
            grads = [p.grad for p in bucket.params if p.grad is not None]
            self._pending[index] = grouped_allreduce_async_(grads, name=name, op=Average,
                                                            process_set=self.process_set)
            return
        flat = bucket.flat_grads()
        for p in bucket.params:  # stage 2: only the owner keeps a gradient
            p.grad = None
        self._pending[index] = reducescatter_async(flat, name=name, op=Average,
                                                   process_set=self.process_set)
        for done in [i for i, h in self._pending.items() if h.poll()]:
            self._collect(done)  # frees its flat buffer now, not at step()

    def _collect(self, index):
        """Waits for bucket `index`'s reduction; stage 2: this rank's
        gradients become views of its segment."""
        out = synchronize(self._pending.pop(index))
        if self.stage == 2:
            bucket = self._buckets[index]
            for p in bucket.owned(self.rank):
                if p.requires_grad:
                    start = bucket.offset[p]
                    p.grad = out[start:start + p.numel()].view_as(p)

    def _finish_reductions(self):
        """Reduces the buckets whose hooks did not all fire, waits for every
        bucket, and (stage 2) sets this rank's gradients from its segments."""
        for index, bucket in enumerate(self._buckets):
            if index not in self._reduced and any(p.requires_grad for p in bucket.params):
                self._reduce(index)
        for index in sorted(self._pending):
            self._collect(index)
        self._reduced.clear()

    def _sync_params(self):
        """Allgathers every bucket's updated parameters from their owners."""
        window = []
        for index, bucket in enumerate(self._buckets):
            handle = allgather_async(bucket.segment_of(self.rank),
                                     name="%s.param.%d" % (self._name, index),
                                     process_set=self.process_set)
            window.append((bucket, handle))
            if len(window) >= _SYNC_WINDOW:
                done, handle = window.pop(0)
                done.scatter_params(synchronize(handle), self.rank)
        for bucket, handle in window:
            bucket.scatter_params(synchronize(handle), self.rank)

    # ---- step ----

    def step(self, closure=None, **kwargs):
        """Averages the gradients (waiting for the reductions started during
        backward), steps this rank's shard, and syncs the parameters."""
        if self.world_size > 1:
            self._register_hooks()  # parameters that became trainable
            self._finish_reductions()
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(**kwargs) if closure is None else \
            self.optim.step(closure=closure, **kwargs)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        if self.world_size > 1:
            self._sync_params()
        return loss

    def zero_grad(self, set_to_none=False):
        if self._reduced:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                                 "before optimizer.step(). This is prohibited as it can cause a "
                                 "race condition.")
        self._fired.clear()
        return super().zero_grad(set_to_none=set_to_none)

    @staticmethod
    def _sync_param_groups(src_param_groups, dst_param_groups):
        """Copies every setting but the parameters (lr set by schedulers...)."""
        for src, dst in zip(src_param_groups, dst_param_groups):
            for key in src:
                if key != "params":
                    dst[key] = src[key]

    # ---- state dicts ----

    def consolidate_state_dict(self, to=0):
        """Collects every rank's local optimizer state on rank `to` (call it on
        all ranks); state_dict() on `to` then returns the full state."""
        if not 0 <= to < self.world_size:
            raise ValueError("consolidate_state_dict: to=%r is not a rank of the process set "
                             "(size %d)" % (to, self.world_size))
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        self._all_state_dicts = []
        for rank in range(self.world_size):
            mine = self.optim.state_dict() if rank == self.rank else None
            got = broadcast_object(mine, root_rank=rank,
                                   name="%s.state.%d" % (self._name, rank),
                                   process_set=self.process_set)
            if self.rank == to:
                self._all_state_dicts.append(got)

    def state_dict(self):
        """The full optimizer state, indexed by global parameter position as a
        plain optimizer's (consolidate_state_dict first). Loads on any number
        of ranks, or into the unwrapped optimizer class."""
        if not self._all_state_dicts:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please "
                               "call `consolidate_state_dict(to=%d)` on all ranks beforehand if "
                               "you meant to save the global state." % self.rank)
        state_dict = super().state_dict()
        to_index = self._param_to_index
        for rank, local in enumerate(self._all_state_dicts):
            for local_group, group in zip(local["param_groups"], self._partition[rank]):
                for local_index, p in zip(local_group["params"], group["params"]):
                    if local_index in local["state"]:
                        state_dict["state"][to_index[p]] = local["state"][local_index]
        state_dict["state"] = dict(sorted(state_dict["state"].items()))
        return state_dict

    def load_state_dict(self, state_dict):
        """Loads a full state (from state_dict(), taken on any number of ranks):
        this rank keeps the state of the parameters it owns."""
        state_dict = dict(state_dict)
        state = {}
        index_to_param = self._index_to_param
        for index, value in state_dict["state"].items():
            if not 0 <= int(index) < len(index_to_param):
                raise ValueError("ZeroRedundancyOptimizer.load_state_dict: state for parameter "
                                 "%s, but the optimizer has %d parameters" %
                                 (index, len(index_to_param)))
            p = index_to_param[int(index)]
            if self._owner[p] == self.rank:
                state[index] = value
        state_dict["state"] = state
        super().load_state_dict(state_dict)  # checks the groups, casts to the parameters
        for p, value in list(self.state.items()):
            self.optim.state[p] = value
        self.state.clear()
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
