"""FullyShardedDataParallel: ZeRO stage 3 on cohort's collectives.

The wrapped module's parameters are grouped into units (by default each
submodule holding parameters of its own; or the modules `wrap` selects, each
taking the parameters below it that no nested unit took; the root takes the
rest). A unit's parameters are flattened, padded to a multiple of the worker
count and sharded: rank r keeps the r-th slice as one nn.Parameter, which is
all the optimizer sees. Before a unit's forward its slices are allgathered
and the parameters become views of the gathered buffer; after the forward
the buffer is dropped. The tensors autograd saves that are views of it are
saved as positions instead (saved_tensors_hooks), so backward allgathers the
unit again when it first needs them; when the unit's gradient is complete it
is reduce-scattered (averaged over the ranks) in the background and the
gathered buffer dropped. At the end of backward the averaged shards land in
the shard parameters' .grad. With `prefetch`, the next unit's allgather
starts while the current one computes (forward order, and its reverse in
backward).

Rules: every rank runs the same units in the same order (as any collective
requires); a unit's parameters exist as attributes only during its forward
(use them there, e.g. no weight tying across units)."""
from collections import OrderedDict

import torch
from torch.autograd import Variable

from ..process_sets import global_process_set
from .mpi_ops import Average, allgather_async, broadcast_, reducescatter_async, synchronize
from .zero import _op_prefix, _place_in


class _Unit:
    """One group of parameters gathered and released together."""

    def __init__(self, index, module, entries, world_size, rank, name):
        self.index = index
        self.module = module
        self.entries = entries  # (qualified name, owner module, attribute, shape)
        self.numels = [int(torch.Size(shape).numel()) for _, _, _, shape in entries]
        self.numel = sum(self.numels)
        self.shard_numel = max(1, -(-self.numel // world_size))
        self.rank = rank
        self.name = name
        self.shard = None  # the nn.Parameter holding this rank's slice
        self.full = None  # the gathered flat buffer while it is alive
        self.gathering = None  # handle of an allgather in flight
        self.reductions = []  # handles of gradient reduce-scatters in flight
        self.reduced = 0  # reductions collected in this backward (for names)
        self.gathers = 0  # for unique names within a step

    def views(self, flat):
        """The unit's parameters as views of a flat buffer."""
        out, offset = [], 0
        for (_, _, _, shape), n in zip(self.entries, self.numels):
            out.append(flat[offset:offset + n].view(shape))
            offset += n
        return out


class _Unshard(torch.autograd.Function):
    """A unit's parameters, as views of its gathered buffer; backward packs
    their gradients into one flat buffer (once: views of one flat output
    would each get a full-size gradient) and starts its reduce-scatter."""

    @staticmethod
    def forward(ctx, shard, fsdp, unit):
        ctx.fsdp, ctx.unit = fsdp, unit
        return tuple(unit.views(fsdp._gathered(unit)))

    @staticmethod
    def backward(ctx, *grads):
        unit = ctx.unit
        flat = torch.zeros(unit.shard_numel * ctx.fsdp.world_size, dtype=unit.shard.dtype)
        for view, grad in zip(unit.views(flat), grads):
            if grad is not None:
                view.copy_(grad)
        ctx.fsdp._reduce_grad(unit, flat)
        return None, None, None


class FullyShardedDataParallel(torch.nn.Module):
    """Wraps `module` so each rank stores 1/size of its parameters (plus one
    gathered unit at a time) and averages gradients over the ranks.

    wrap: None (each submodule with parameters of its own is a unit), a
      predicate module -> bool, or a list of submodules.
    prefetch: start the next unit's allgather during the current one.
    Parameters are broadcast from rank 0 first, so every rank starts equal.
    The optimizer takes this wrapper's parameters(); state_dict() and
    load_state_dict() work on the full, unsharded parameters (collective:
    call them on every rank), as do full_optim_state_dict() and
    load_full_optim_state_dict()."""

    def __init__(self, module, wrap=None, prefetch=True, process_set=global_process_set):
        super().__init__()
        self.module = module
        self.prefetch = prefetch
        self.process_set = process_set
        self.world_size, self.rank = _place_in(process_set, "FullyShardedDataParallel")
        self._param_names = [name for name, _ in module.named_parameters()]
        self._name = _op_prefix("fsdp", process_set, [(n, p.shape) for n, p in
                                                      module.named_parameters()])
        self._units = self._make_units(self._unit_modules(wrap))
        self.shards = torch.nn.ParameterList([u.shard for u in self._units])
        self._by_storage = {}  # storage address of a gathered buffer -> unit
        self._order = []  # units in the order this (or the last) forward ran them
        self._last_order = []  # the previous forward's, for prefetching in forward
        self._callback_queued = False
        self.gathered_numel = 0  # elements of gathered buffers alive now
        self.peak_gathered_numel = 0  # the most alive at once since the last reset
        for unit in self._units[:-1]:
            unit.module.register_forward_pre_hook(self._pre_forward_hook(unit))
            unit.module.register_forward_hook(self._post_forward_hook(unit))

    # ---- construction ----

    def _unit_modules(self, wrap):
        subs = [m for name, m in self.module.named_modules() if name]
        if wrap is None:
            return [m for m in subs if any(True for _ in m.parameters(recurse=False))]
        if callable(wrap):
            return [m for m in subs if wrap(m)]
        chosen = list(wrap)
        for m in chosen:
            if not any(m is s for s in subs):
                raise ValueError("FullyShardedDataParallel: wrap lists a module that is not a "
                                 "submodule of the wrapped module: %s" % type(m).__name__)
        return chosen

    def _make_units(self, unit_modules):
        """Units deepest first (a nested unit takes its parameters before its
        parent), then the root with whatever is left."""
        path = {id(m): name for name, m in self.module.named_modules()}
        taken, units = set(), []
        ordered = sorted(unit_modules, key=lambda m: -path[id(m)].count(".")
                         if path[id(m)] else 0)
        for m in ordered + [self.module]:
            entries = []
            for sub_name, sub in m.named_modules():
                for attr, p in list(sub._parameters.items()):
                    if p is None or id(p) in taken:
                        continue
                    taken.add(id(p))
                    prefix = path[id(m)]
                    qual = ".".join(x for x in (prefix, sub_name, attr) if x)
                    entries.append((qual, sub, attr, tuple(p.shape), p))
            units.append((m, entries))
        by_position = {name: i for i, (name, _) in enumerate(self.module.named_parameters())}
        for _, entries in units:  # checked before anything is sharded
            entries.sort(key=lambda e: by_position[e[0]])
            frozen = [e[0] for e in entries if not e[4].requires_grad]
            if frozen and len(frozen) < len(entries):  # one shard: trained as a whole
                raise ValueError("FullyShardedDataParallel: a unit mixes trainable and frozen "
                                 "parameters (frozen: %s); wrap them in separate units" %
                                 ", ".join(frozen))
        return [self._shard_unit(index, m, entries) for index, (m, entries) in enumerate(units)]

    def _shard_unit(self, index, module, entries):
        unit = _Unit(index, module, [e[:4] for e in entries], self.world_size, self.rank,
                     "%s.u%d" % (self._name, index))
        dtype = entries[0][4].dtype if entries else torch.float32
        flat = torch.cat([e[4].detach().reshape(-1) for e in entries]) if entries else \
            torch.zeros(0, dtype=dtype)
        if self.world_size > 1 and entries:
            broadcast_(flat, 0, name=unit.name + ".init", process_set=self.process_set)
        requires_grad = any(e[4].requires_grad for e in entries)
        unit.shard = torch.nn.Parameter(self._slice(unit, flat), requires_grad=requires_grad)
        for _, sub, attr, _, _ in entries:
            del sub._parameters[attr]  # the full tensor is freed once the caller drops it
        self._detach(unit)
        return unit

    def _slice(self, unit, flat):
        padded = torch.zeros(unit.shard_numel * self.world_size, dtype=flat.dtype)
        padded[:unit.numel].copy_(flat.reshape(-1))
        start = self.rank * unit.shard_numel
        return padded[start:start + unit.shard_numel].clone()

    # ---- gathering ----

    def _start_gather(self, unit):
        """Starts the unit's allgather; its buffer counts from now (the engine
        holds it until the gather is waited on)."""
        if unit.full is None and unit.gathering is None:
            unit.gathers += 1
            unit.gathering = allgather_async(unit.shard.detach(), name="%s.ag.%d" % (
                unit.name, unit.gathers), process_set=self.process_set)
            self.gathered_numel += unit.shard_numel * self.world_size
            self.peak_gathered_numel = max(self.peak_gathered_numel, self.gathered_numel)

    def _gathered(self, unit):
        """The unit's gathered flat buffer (allgathering it unless alive)."""
        if unit.full is None:
            self._start_gather(unit)
            unit.full = synchronize(unit.gathering)
            unit.gathering = None
            self._by_storage[unit.full.storage().data_ptr()] = unit
        return unit.full

    def _release(self, unit):
        if unit.full is not None:
            self._by_storage.pop(unit.full.storage().data_ptr(), None)
            self.gathered_numel -= unit.full.numel()
            unit.full = None

    def _prefetch_after(self, unit, backward):
        """Starts gathering the unit that ran after `unit` in the last forward
        (before it, in backward)."""
        order = self._order if backward else self._last_order
        if not self.prefetch or unit not in order:
            return
        position = order.index(unit) + (-1 if backward else 1)
        if 0 <= position < len(order):
            self._start_gather(order[position])

    def _attach(self, unit):
        """Makes the unit's parameters attributes of their modules (views of
        the gathered buffer, tracked by autograd through _Unshard)."""
        if torch.is_grad_enabled() and unit.shard.requires_grad:
            views = _Unshard.apply(unit.shard, self, unit)
        else:
            views = unit.views(self._gathered(unit))
        for (_, sub, attr, _), view in zip(unit.entries, views):
            sub.__dict__[attr] = view

    def _detach(self, unit):
        """Outside its forward a parameter is an empty placeholder (as in
        torch's FSDP), so the module still prints and the mistake of using
        it there fails on its shape."""
        for _, sub, attr, _ in unit.entries:
            sub.__dict__[attr] = torch.empty(0, dtype=unit.shard.dtype)
        self._release(unit)

    def _pre_forward_hook(self, unit):
        def hook(module, inputs):
            if self.world_size > 1:
                self._order.append(unit)
                self._prefetch_after(unit, backward=False)
            self._attach(unit)
        return hook

    def _post_forward_hook(self, unit):
        def hook(module, inputs, output):
            self._detach(unit)
        return hook

    # ---- autograd ----

    def _pack(self, tensor):
        if tensor.layout != torch.strided or not self._by_storage:
            return tensor
        unit = self._by_storage.get(tensor.storage().data_ptr())
        if unit is None or unit.full is None:
            return tensor
        return (unit, tensor.storage_offset(), tensor.size(), tensor.stride())

    def _unpack(self, packed):
        if not isinstance(packed, tuple):
            return packed
        unit, offset, size, stride = packed
        self._queue_final_callback()
        if unit.full is None:
            full = self._gathered(unit)
            self._prefetch_after(unit, backward=True)
        else:
            full = unit.full
        return full.detach().as_strided(size, stride, offset)

    def _queue_final_callback(self):
        if not self._callback_queued:
            self._callback_queued = True
            Variable._execution_engine.queue_callback(self._finish_backward)

    def _reduce_grad(self, unit, grad):
        """Backward reached the start of the unit: its gradient is complete."""
        self._queue_final_callback()
        self._release(unit)
        if self.world_size == 1:
            unit.reductions.append(grad)
            return
        unit.reductions.append(reducescatter_async(grad, name="%s.rs.%d" % (
            unit.name, unit.reduced + len(unit.reductions)), op=Average,
            process_set=self.process_set))
        for other in self._units:  # frees finished reductions' gradients now
            self._collect(other, only_done=True)

    def _collect(self, unit, only_done):
        """Adds the unit's finished (or all) gradient reductions to its .grad."""
        waiting = []
        for handle in unit.reductions:
            if only_done and not isinstance(handle, torch.Tensor) and not handle.poll():
                waiting.append(handle)
                continue
            part = handle if isinstance(handle, torch.Tensor) else synchronize(handle)
            unit.reduced += 1
            if unit.shard.grad is None:
                unit.shard.grad = part
            else:
                unit.shard.grad.add_(part)
        unit.reductions = waiting

    def _finish_backward(self):
        """End of backward: the averaged gradient shards into .grad."""
        self._callback_queued = False
        for unit in self._units:
            self._collect(unit, only_done=False)
            unit.reduced = 0
            if unit.gathering is not None:  # a prefetch nobody used
                synchronize(unit.gathering)
                unit.gathering = None
                self.gathered_numel -= unit.shard_numel * self.world_size
            self._release(unit)
            unit.gathers = 0

    # ---- forward ----

    def forward(self, *args, **kwargs):
        root = self._units[-1]
        self._last_order, self._order = self._order or self._last_order, []
        for unit in self._units:
            unit.gathers = 0 if unit.gathering is None else unit.gathers
        with torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack):
            if not root.entries:  # every parameter is in a unit of its own
                return self.module(*args, **kwargs)
            self._attach(root)
            try:
                return self.module(*args, **kwargs)
            finally:
                self._detach(root)

    def reset_peak_gathered(self):
        self.peak_gathered_numel = self.gathered_numel

    # ---- full state ----

    def _full_flat(self, unit):
        if self.world_size == 1:
            return unit.shard.detach()[:unit.numel]
        return synchronize(allgather_async(unit.shard.detach(), name=unit.name + ".full",
                                           process_set=self.process_set))[:unit.numel]

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """The full parameters and buffers under the wrapped module's names
        (collective: call on every rank)."""
        del keep_vars
        out = OrderedDict() if destination is None else destination
        values = {}
        for unit in self._units:
            for (name, _, _, _), view in zip(unit.entries, unit.views(self._full_flat(unit))):
                values[name] = view.clone()
        for name in self._param_names:  # the wrapped module's order
            out[prefix + name] = values[name]
        for name, buf in self.module.named_buffers():
            out[prefix + name] = buf.detach().clone()
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Loads full parameters (from state_dict(), taken on any number of
        ranks): each rank keeps its slices."""
        names = {e[0] for u in self._units for e in u.entries}
        buffers = dict(self.module.named_buffers())
        if strict:
            missing = sorted((names | set(buffers)) - set(state_dict))
            unexpected = sorted(set(state_dict) - names - set(buffers))
            if missing or unexpected:
                raise RuntimeError("FullyShardedDataParallel.load_state_dict: missing keys %s, "
                                   "unexpected keys %s" % (missing, unexpected))
        for unit in self._units:
            if not unit.entries or any(e[0] not in state_dict for e in unit.entries):
                continue
            parts = []
            for (name, _, _, shape) in unit.entries:
                value = state_dict[name]
                if tuple(value.shape) != tuple(shape):
                    raise RuntimeError("FullyShardedDataParallel.load_state_dict: %s has shape "
                                       "%s, expected %s" % (name, tuple(value.shape),
                                                            tuple(shape)))
                parts.append(value.detach().reshape(-1).to(unit.shard.dtype))
            with torch.no_grad():
                unit.shard.copy_(self._slice(unit, torch.cat(parts)))
        with torch.no_grad():
            for name, buf in buffers.items():
                if name in state_dict:
                    buf.copy_(state_dict[name])

    def full_optim_state_dict(self, optimizer):
        """The optimizer's state (an optimizer over this wrapper's parameters)
        under the full parameters' names, its per-element tensors gathered
        (collective: call on every rank). Loads on any number of ranks with
        load_full_optim_state_dict."""
        by_shard = {u.shard: u for u in self._units}
        state, groups, per_element = {}, [], set()
        for group in optimizer.param_groups:
            names = []
            for p in group["params"]:
                unit = by_shard[p]
                names.extend(e[0] for e in unit.entries)
                per_name = [dict() for _ in unit.entries]
                for key, value in sorted(optimizer.state.get(p, {}).items()):
                    if torch.is_tensor(value) and value.shape == p.shape:
                        per_element.add(key)
                        full = synchronize(allgather_async(
                            value.detach().contiguous(), name="%s.opt.%s" % (unit.name, key),
                            process_set=self.process_set)) if self.world_size > 1 else value
                        for d, view in zip(per_name, unit.views(full[:unit.numel])):
                            d[key] = view.clone()
                    else:
                        for d in per_name:
                            d[key] = value.clone() if torch.is_tensor(value) else value
                for (name, _, _, _), d in zip(unit.entries, per_name):
                    if d:
                        state[name] = d
            names.sort(key=self._param_names.index)  # the wrapped module's order
            groups.append(dict({k: v for k, v in group.items() if k != "params"},
                               params=names))
        # Which keys hold a value per element (sharded), for loading: a 0-d
        # parameter's moments look like a scalar such as Adam's step.
        return {"state": state, "param_groups": groups, "per_element": sorted(per_element)}

    def load_full_optim_state_dict(self, optimizer, full_state):
        """Loads full_optim_state_dict()'s output (from any number of ranks)
        into `optimizer`, keeping this rank's slices."""
        by_shard = {u.shard: u for u in self._units}
        per_element = set(full_state.get("per_element", ()))
        if len(full_state["param_groups"]) != len(optimizer.param_groups):
            raise ValueError("load_full_optim_state_dict: the state has %d parameter groups, "
                             "the optimizer %d" % (len(full_state["param_groups"]),
                                                   len(optimizer.param_groups)))
        for saved, group in zip(full_state["param_groups"], optimizer.param_groups):
            for key, value in saved.items():
                if key != "params":
                    group[key] = value
            for p in group["params"]:
                unit = by_shard[p]
                per_name = [full_state["state"].get(e[0]) for e in unit.entries]
                if not any(per_name):
                    continue
                if not all(per_name):
                    missing = [e[0] for e, d in zip(unit.entries, per_name) if not d]
                    raise ValueError("load_full_optim_state_dict: no state for %s" %
                                     ", ".join(missing))
                local = {}
                for key, value in per_name[0].items():
                    if key in per_element:
                        flat = torch.cat([d[key].reshape(-1) for d in per_name])
                        local[key] = self._slice(unit, flat.to(p.dtype))
                    else:
                        local[key] = value.clone() if torch.is_tensor(value) else value
                optimizer.state[p] = local
