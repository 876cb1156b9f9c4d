"""ZeroRedundancyOptimizer: ZeRO stages 1 and 2 on cohort's collectives, with
the arguments and state-dict format of torch.distributed.optim's class.

Every rank owns whole parameters (as in torch); `.optim` is the local
optimizer over the owned ones, so optimizer state is sharded (stage 1).
Unlike torch's class it also averages the gradients itself, so no
DistributedDataParallel is needed around the model. Each bucket of
gradients is reduce-scattered as soon as backward has produced it, so a rank
receives the averaged gradients of the parameters it owns, and after the
local step every rank's updated parameters are allgathered: together the
bytes of one allreduce, as plain data parallel moves.

- stage 1: the gradients are views of one flat buffer per bucket, kept from
  step to step (autograd accumulates into it), and the reduce-scatter works
  in place: no copy, no allocation per step. Parameters this rank does not
  own keep its own (not averaged) gradient;
- stage 2: each bucket is copied into one of a few reused send buffers and
  its gradients are freed; the owned gradients are views of a per-bucket
  buffer of this rank's segment that the reduce-scatter writes into.

The parameter allgather writes into a reused flat buffer (two in flight),
or, with parameters_as_bucket_view=True, into the flat buffers the
parameters themselves are views of (no copy at all).

A bucket is a run of consecutive parameters in backward order (reverse
registration order) laid out as one padded segment per rank, rank r's segment
holding the parameters rank r owns; a reduce-scatter or allgather of the
bucket therefore moves each parameter to or from its owner. Ownership is
decided bucket by bucket, largest parameter first, to the rank with the
smallest segment (ties: the least total so far), which keeps the padding
small and the ranks' totals balanced."""
import copy
import warnings
import zlib
from itertools import chain

import torch

from .. import _cohort
from ..process_sets import global_process_set, set_id, set_size
from .functions import broadcast_object
from .mpi_ops import Average, allgather_async, reducescatter_async, synchronize
from .optimizer import STEP_AFTER_SYNCHRONIZE, _DistributedOptimizer


# Parameter-sync allgathers in flight at once: bounds the reused gather
# buffers to two buckets instead of the whole model.
_SYNC_WINDOW = 2
# Stage 2: gradient buckets being reduce-scattered at once, each from a
# reused send buffer; one more ready bucket waits for the oldest to finish.
_SEND_BUFFERS = 2


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
        self.numel = self.segment * world_size
        self.padding = [(r * self.segment + used[r], (r + 1) * self.segment)
                        for r in range(world_size) if used[r] < self.segment]
        self.grad_shard = None  # stage 2: this rank's averaged segment (owned .grad views)

    def start(self, p):
        return self.owner[p] * self.segment + self.offset[p]

    def view(self, flat, p):
        """p's place in a flat buffer of the bucket's layout, shaped as p."""
        start = self.start(p)
        return flat[start:start + p.numel()].view_as(p)

    def pack_grads(self, flat):
        """Every parameter's gradient (zeros where none) at its place in `flat`."""
        for p in self.params:
            if p.grad is not None:
                self.view(flat, p).copy_(p.grad)
            else:
                self.view(flat, p).zero_()
        for begin, end in self.padding:
            flat[begin:end].zero_()

    def bind_grads(self, flat):
        """Makes every trainable parameter's .grad its view of `flat`, copying
        a gradient autograd put elsewhere (after zero_grad(set_to_none=True))
        and zeroing the place of a missing one; autograd then accumulates
        into `flat` directly from the next backward on."""
        for p in self.params:
            if not p.requires_grad and p.grad is None:
                continue
            view = self.view(flat, p)
            if p.grad is None:
                view.zero_()
            elif p.grad.data_ptr() != view.data_ptr():
                view.copy_(p.grad)
            else:
                continue
            p.grad = view

    def shard_view(self, p):
        """Stage 2: an owned parameter's averaged gradient in grad_shard."""
        return self.grad_shard[self.offset[p]:self.offset[p] + p.numel()].view_as(p)

    def owned(self, rank):
        return [p for p in self.params if self.owner[p] == rank]

    def own_segment(self, flat, rank):
        return flat[rank * self.segment:(rank + 1) * self.segment]

    def pack_params(self, flat, rank):
        """This rank's owned parameters into its segment of `flat`."""
        for p in self.owned(rank):
            self.view(flat, p).copy_(p.detach())

    def unpack_params(self, flat, rank):
        """Copies the other ranks' parameters out of an allgathered `flat`."""
        with torch.no_grad():
            for p in self.params:
                if self.owner[p] != rank:
                    p.copy_(self.view(flat, p))

    def bind_params(self, flat):
        """Makes every parameter's .data its view of `flat` (values copied in
        where .data is elsewhere: the first time, or after a replacement)."""
        for p in self.params:
            view = self.view(flat, p)
            if p.data.data_ptr() != view.data_ptr():
                view.copy_(p.detach())
                p.data = view


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
    backward). `parameters_as_bucket_view=True` makes each param.data a view
    of its bucket's flat buffer (as torch does), so the parameter allgather
    writes into the parameters without a copy; with False param.data stays
    the tensor it was and the allgather goes through a reused buffer."""

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
        self._pending = {}  # bucket index -> handle of its reduction in flight (oldest first)
        self._flat_grads = {}  # stage 1: bucket index -> its flat gradients (the .grad views)
        self._sends = {}  # stage 2: bucket index -> the send buffer of its reduction in flight
        self._free_sends = []  # stage 2: send buffers not in use
        self._flat_params = {}  # parameters_as_bucket_view: bucket index -> flat parameters
        self._gather = [None] * _SYNC_WINDOW  # reused allgather buffers
        self._synchronized = False  # synchronize() ran since the last step()
        self._should_synchronize = True  # False inside skip_synchronize()
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

    def _flat(self, numel):
        """A new flat buffer of the parameters' dtype."""
        return torch.zeros(numel, dtype=self._all_params[0].dtype)

    def _bucket_sized(self):
        """A new reusable flat buffer with room for any bucket."""
        return self._flat(max(b.numel for b in self._buckets))

    def _reduce(self, index):
        """Starts bucket `index`'s gradient reduce-scatter."""
        self._fired.pop(index, None)
        self._reduced.add(index)
        bucket = self._buckets[index]
        name = "%s.grad.%d" % (self._name, index)
        if self.stage == 1:
            flat = self._flat_grads.get(index)
            if flat is None:
                flat = self._flat_grads[index] = self._flat(bucket.numel)
            bucket.bind_grads(flat)
            self._pending[index] = reducescatter_async(
                flat, name=name, op=Average, process_set=self.process_set,
                output=bucket.own_segment(flat, self.rank))  # in place
            return
        flat = self._send_buffer(bucket.numel)
        bucket.pack_grads(flat)
        for p in bucket.params:  # stage 2: only the owner keeps a gradient
            p.grad = None
        if bucket.grad_shard is None:
            bucket.grad_shard = self._flat(bucket.segment)
        self._sends[index] = flat
        self._pending[index] = reducescatter_async(flat, name=name, op=Average,
                                                   process_set=self.process_set,
                                                   output=bucket.grad_shard)

    def _send_buffer(self, numel):
        """Stage 2: a free send buffer of at least `numel` elements (its
        first `numel` used), after the oldest reduction in flight finished
        when all of them are in use."""
        while not self._free_sends and len(self._sends) >= _SEND_BUFFERS:
            self._collect(next(iter(self._pending)))
        flat = self._free_sends.pop() if self._free_sends else None
        if flat is None or flat.numel() < numel:
            flat = self._bucket_sized()
        return flat[:numel]

    def _collect(self, index):
        """Waits for bucket `index`'s reduction; stage 2: frees its send
        buffer and makes this rank's gradients views of its segment."""
        synchronize(self._pending.pop(index))
        if self.stage == 2:
            flat = self._sends.pop(index)
            self._free_sends.append(flat._base if flat._base is not None else flat)
            bucket = self._buckets[index]
            for p in bucket.owned(self.rank):
                if p.requires_grad:
                    p.grad = bucket.shard_view(p)

    def _finish_reductions(self):
        """Reduces the buckets whose hooks did not all fire, and waits for every
        bucket."""
        for index, bucket in enumerate(self._buckets):
            if index not in self._reduced and any(p.requires_grad for p in bucket.params):
                self._reduce(index)
        while self._pending:
            self._collect(next(iter(self._pending)))
        self._reduced.clear()

    def _sync_params(self):
        """Allgathers every bucket's updated parameters from their owners:
        into the parameters' own flat buffers (parameters_as_bucket_view), or
        through _SYNC_WINDOW reused buffers."""
        window = []
        for index, bucket in enumerate(self._buckets):
            name = "%s.param.%d" % (self._name, index)
            if self.parameters_as_bucket_view:
                flat = self._flat_params.get(index)
                if flat is None:
                    flat = self._flat_params[index] = self._flat(bucket.numel)
                bucket.bind_params(flat)
                window.append((None, allgather_async(bucket.own_segment(flat, self.rank),
                                                     name=name, process_set=self.process_set,
                                                     output=flat)))
                continue
            slot = index % _SYNC_WINDOW
            if len(window) >= _SYNC_WINDOW:
                done, handle = window.pop(0)
                done.unpack_params(synchronize(handle), self.rank)
            if self._gather[slot] is None or self._gather[slot].numel() < bucket.numel:
                self._gather[slot] = self._bucket_sized()
            flat = self._gather[slot][:bucket.numel]
            bucket.pack_params(flat, self.rank)
            window.append((bucket, allgather_async(bucket.own_segment(flat, self.rank), name=name,
                                                   process_set=self.process_set, output=flat)))
        for bucket, handle in window:
            out = synchronize(handle)
            if bucket is not None:
                bucket.unpack_params(out, self.rank)

    # ---- step ----

    def synchronize(self):
        """Waits for the gradient reductions (starting those whose hooks did
        not fire), as horovod.torch's optimizer does: afterwards this rank's
        own parameters hold their averaged gradients (stage 1: the others
        this rank's own; stage 2: none). step() inside skip_synchronize()
        then steps without waiting again."""
        if self.world_size > 1:
            self._register_hooks()  # parameters that became trainable
            self._finish_reductions()
        self._synchronized = True

    skip_synchronize = _DistributedOptimizer.skip_synchronize  # the same flag, same block

    def _ready_to_step(self):
        """Synchronizes unless synchronize() ran already or step() is inside
        skip_synchronize(). Unlike horovod.torch, a second synchronize
        would not be harmless (a rank's own segment is averaged in place), so
        step() after synchronize() only warns, with Horovod's warning."""
        if not self._should_synchronize:
            if self._reduced:
                raise RuntimeError("ZeroRedundancyOptimizer: step() inside skip_synchronize() "
                                   "while gradient reductions are in flight; call "
                                   "optimizer.synchronize() first")
            return
        if self._synchronized:
            warnings.warn(STEP_AFTER_SYNCHRONIZE)
            return
        self.synchronize()

    def step(self, closure=None, **kwargs):
        """Averages the gradients (waiting for the reductions started during
        backward), steps this rank's shard, and syncs the parameters."""
        self._ready_to_step()
        self._synchronized = False
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
