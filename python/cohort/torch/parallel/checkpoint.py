"""Sharded checkpoints of a Pipeline (with tensor-parallel layers) and the
merge back into one unsharded state_dict.

A checkpoint at LOCATION is one cohort.checkpoint store per shard,
LOCATION/pp<P>-tp<T>, written by that shard's data-parallel rank 0: the
stage's state_dict (keys as in the whole model), its optimizer state
(ZeRO's consolidated over the dp set) and the layout (mesh sizes,
partition, each parameter's tensor-parallel dimension). Every shard of a
step is written before save_checkpoint returns on any rank, and load takes
the newest step that every shard holds, so a save cut short is skipped.
The data-parallel size may differ at load (the dp dimension restarts at
another size); pp, tp, the partition and the virtual stages may not."""
import os

import torch

from ... import _ops
from ...checkpoint import Checkpointer
from ..functions import allgather_object


def shard_location(location, pp_rank, tp_rank):
    return os.path.join(os.fspath(location), "pp%d-tp%d" % (pp_rank, tp_rank))


def layout_of(pipeline):
    """What a shard must agree on with the pipeline that loads it."""
    mesh = pipeline.mesh
    tp_dims = {}
    for module_name, module in pipeline.named_modules(remove_duplicate=False):
        for name, p in module._parameters.items():
            if p is not None:
                key = "%s.%s" % (module_name, name) if module_name else name
                tp_dims[key] = getattr(p, "tensor_parallel_dim", None)
    return {"pp": mesh.dims["pp"], "tp": mesh.dims["tp"], "dp": mesh.dims["dp"],
            "pp_rank": mesh.coordinate("pp"), "tp_rank": mesh.coordinate("tp"),
            "partition": list(pipeline.partition), "virtual_stages": pipeline.virtual_stages,
            "tensor_parallel_dims": tp_dims}


def save_checkpoint(location, step, pipeline, optimizer=None, keep_last=3, extra=None):
    """Saves this rank's shard as checkpoint `step`; call it on every rank
    (the ZeRO state is gathered over dp, and every shard is on disk before
    any rank returns). `extra`: anything else to keep (a data position)."""
    mesh = pipeline.mesh
    optimizer_state = None
    if optimizer is not None:
        if hasattr(optimizer, "consolidate_state_dict"):  # ZeRO: collective over the dp set
            _consolidate_zero(optimizer, mesh)
            if mesh.dp.rank == 0:
                optimizer_state = optimizer.state_dict()
        else:
            optimizer_state = optimizer.state_dict()
    if mesh.dp.rank == 0:
        state = {"model": pipeline.state_dict(), "optimizer": optimizer_state,
                 "layout": layout_of(pipeline), "extra": extra}
        store = Checkpointer(shard_location(location, mesh.coordinate("pp"),
                                            mesh.coordinate("tp")), keep_last=keep_last)
        store.save(state, step)
    _ops.barrier_async(0).wait()


def _consolidate_zero(optimizer, mesh):
    """ZeroRedundancyOptimizer.consolidate_state_dict(to=0) over mesh.dp.
    Not that method itself: it passes set positions to broadcast_object as
    root ranks, which are global ranks, so it fails on a process set that is
    not the whole job (every dp set here but one)."""
    optimizer._sync_param_groups(optimizer.param_groups, optimizer.optim.param_groups)
    states = allgather_object(optimizer.optim.state_dict(), name="parallel.checkpoint.zero",
                              process_set=mesh.dp.process_set)
    optimizer._all_state_dicts = states if mesh.dp.rank == 0 else []


def _common_step(location, mesh, step):
    """The newest step every shard holds (or `step`, checked); None if none."""
    steps = [c["step"] for c in Checkpointer(shard_location(
        location, mesh.coordinate("pp"), mesh.coordinate("tp"))).list()]
    everyone = allgather_object(steps, name="parallel.checkpoint.steps")
    common = set(everyone[0]).intersection(*everyone[1:])
    if step is not None:
        if step not in common:
            raise ValueError("load_checkpoint: step %d is not in every shard at %s (common "
                             "steps: %s)" % (step, location, sorted(common)))
        return step
    return max(common) if common else None


def _check_layout(saved, mine, location):
    for key in ("pp", "tp", "partition", "virtual_stages"):
        if saved[key] != mine[key]:
            raise ValueError("load_checkpoint: the checkpoint at %s was saved with %s=%s but this "
                             "pipeline has %s=%s (only the data-parallel size may change)" % (
                                 location, key, saved[key], key, mine[key]))


def load_checkpoint(location, pipeline, optimizer=None, step=None):
    """Loads the newest step every shard holds (or `step`) into this rank's
    pipeline and optimizer; every rank calls it. Returns (step, extra), or
    (None, None) when there is no checkpoint."""
    mesh = pipeline.mesh
    step = _common_step(location, mesh, step)
    if step is None:
        return None, None
    here = shard_location(location, mesh.coordinate("pp"), mesh.coordinate("tp"))
    state, _ = Checkpointer(here).load(step)
    _check_layout(state["layout"], layout_of(pipeline), location)
    pipeline.load_state_dict(state["model"])
    if optimizer is not None and state["optimizer"] is not None:
        optimizer.load_state_dict(state["optimizer"])
    return step, state["extra"]


def merge_checkpoint(location, step=None):
    """The unsharded state_dict of checkpoint `step` (default: the newest
    step every shard holds): tensor-parallel slices concatenated along their
    dimension, every stage's keys together, tied parameters under each of
    their names. Needs no job: it reads the shards' files."""
    location = os.fspath(location)
    shards = sorted(d for d in os.listdir(location) if d.startswith("pp") and "-tp" in d)
    if not shards:
        raise ValueError("merge_checkpoint: no shards (pp<P>-tp<T>) at %s" % location)
    stores = {d: Checkpointer(os.path.join(location, d)) for d in shards}
    if step is None:
        common = set.intersection(*({c["step"] for c in s.list()} for s in stores.values()))
        if not common:
            raise ValueError("merge_checkpoint: no step is in every shard at %s" % location)
        step = max(common)
    states = {}
    for d, store in stores.items():
        state, _ = store.load(step)
        if state is None:
            raise ValueError("merge_checkpoint: shard %s has no step %d" % (d, step))
        states[(state["layout"]["pp_rank"], state["layout"]["tp_rank"])] = state
    first = next(iter(states.values()))["layout"]
    pp, tp = first["pp"], first["tp"]
    missing = [(p, t) for p in range(pp) for t in range(tp) if (p, t) not in states]
    if missing:
        raise ValueError("merge_checkpoint: shards %s of the %d x %d (pp x tp) checkpoint are "
                         "missing at %s" % (["pp%d-tp%d" % m for m in missing], pp, tp, location))
    merged = {}
    for p in range(pp):
        row = [states[(p, t)] for t in range(tp)]
        dims = row[0]["layout"]["tensor_parallel_dims"]
        for key in row[0]["model"]:
            dim = dims.get(key)
            parts = [s["model"][key] for s in row]
            merged[key] = parts[0] if dim is None else torch.cat(parts, dim=dim)
    return dict(sorted(merged.items(), key=lambda kv: _layer_order(kv[0])))


def _layer_order(key):
    head, _, rest = key.partition(".")
    return (int(head), rest) if head.isdigit() else (-1, key)
