"""cohort.torch.distributed: the torch.distributed backend "cohort".

    import cohort.torch.distributed  # registers the backend
    torch.distributed.init_process_group("cohort", ...)

Every c10d collective on CPU tensors (and allreduce/broadcast of CUDA tensors,
torch 2.1 and newer: DDP on GPUs) then runs on cohort's engine (the same
runtime object `cohort` and `cohort.torch` use), so DDP, ZeroRedundancyOptimizer
and plain collectives need no other change. The process group is the
compiled extension cohort._c10d, the one part of cohort built against
LibTorch; rebuild it after a torch upgrade with
`cmake --build build --target cohort_py_c10d`.

Rendezvous: under `cohort run` the runtime joins cohort's own store, and
env:// needs no settings: without MASTER_ADDR/MASTER_PORT, rank 0 serves
torch's TCPStore on a free port at its own address and the ranks learn the
port through cohort (RANK/WORLD_SIZE default to cohort's); under torchrun or
with tcp://, file:// or env:// init, rank 0 starts cohort's store and
publishes its address and a fresh job secret through the c10d Store torch
passes in. Groups from `new_group`/`new_subgroups` are cohort process sets;
send/recv travel on cohort's own point-to-point mesh, monitored_barrier
through the c10d Store.
"""
import importlib
import inspect
import os
import secrets
import socket

import numpy
import torch.distributed as dist
import torch.distributed.distributed_c10d as _c10d_module

import cohort
from cohort import _cohort, settings

try:
    from cohort import _c10d
except ImportError as e:  # built only where the torch headers were found
    raise ImportError(
        "cohort.torch.distributed needs the cohort._c10d extension, built against the installed "
        "torch: run `cmake --build build --target cohort_py_c10d` (%s)" % e) from e

BACKEND = "cohort"
_BOOTSTRAP_KEY = "cohort/bootstrap"
_sets_by_ranks = {}  # tuple(global ranks) -> process set ids added by new_group, oldest first
_groups_per_set = {}  # process set id -> process groups created over it so far


def _launched_by_cohort():
    return settings.is_set(settings.RANK)


def _set_env_defaults_under_cohort_run():
    """Under `cohort run`, env:// works without settings: ranks come from
    cohort's variables, the store from _env_rendezvous."""
    if not _launched_by_cohort() or not settings.is_set(settings.STORE_ADDR):
        return
    for torch_name, cohort_name in (("RANK", settings.RANK), ("WORLD_SIZE", settings.SIZE),
                                    ("LOCAL_RANK", settings.LOCAL_RANK),
                                    ("LOCAL_WORLD_SIZE", settings.LOCAL_SIZE)):
        if settings.is_set(cohort_name):
            os.environ.setdefault(torch_name, settings.text(cohort_name))


# The module, not torch.distributed.rendezvous (a function of the same name).
_rendezvous_module = importlib.import_module("torch.distributed.rendezvous")
_torch_env_rendezvous = _rendezvous_module._rendezvous_handlers["env"]


def _env_rendezvous(url, timeout=_c10d_module.default_pg_timeout, **kwargs):
    """torch's env:// handler, except under `cohort run` without MASTER_ADDR
    and MASTER_PORT: then the job needs no fixed port and no launcher-side
    service (the launcher's host need not be rank 0's, and a port chosen in
    advance may be taken), see _job_store."""
    if (not _launched_by_cohort() or not settings.is_set(settings.STORE_ADDR)
            or ("MASTER_ADDR" in os.environ and "MASTER_PORT" in os.environ)):
        return _torch_env_rendezvous(url, timeout=timeout, **kwargs)
    return _job_store(timeout)


def _job_store(timeout):
    """Rank 0 serves torch's TCPStore on a port the kernel picks, at the
    address its peers reach it at (where its cohort mesh listens); the other
    ranks learn the port from a cohort broadcast."""
    rank, size = int(settings.text(settings.RANK)), int(settings.text(settings.SIZE))
    if not _cohort.is_initialized():
        os.environ.setdefault("COHORT_TIMEOUT", str(timeout.total_seconds()))
        cohort.init()
    host = _cohort.peer_host(0)
    port = numpy.zeros(1, dtype=numpy.int64)
    if rank == 0:
        store = dist.TCPStore(host, 0, size, True, timeout, wait_for_workers=False)
        port[0] = store.port
    cohort.broadcast_(port, 0)
    if rank != 0:
        store = dist.TCPStore(host, int(port[0]), size, False, timeout)
    yield (store, rank, size)
    raise RuntimeError("Unable to perform re-rendezvous using env:// under cohort run")


def _free_port(host):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _publish_cohort_store(store, rank, size):
    """Rank 0 picks the address of cohort's store (hosted by rank 0's runtime)
    and a secret; every rank reads them from the c10d store."""
    if rank == 0:
        host = os.environ.get("MASTER_ADDR", "127.0.0.1")
        port = _free_port(host)
        addr = "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)
        store.set(_BOOTSTRAP_KEY, "%s %s" % (addr, secrets.token_hex(16)))
    addr, secret = store.get(_BOOTSTRAP_KEY).decode().split(" ")
    os.environ["COHORT_STORE_ADDR"] = addr
    os.environ.setdefault("COHORT_SECRET", secret)
    os.environ["RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(size)


def _start_runtime(store, rank, size, timeout):
    if not _cohort.is_initialized():
        if not _launched_by_cohort() and not settings.is_set(settings.STORE_ADDR):
            _publish_cohort_store(store, rank, size)
        os.environ.setdefault("COHORT_TIMEOUT", str(timeout.total_seconds()))
        cohort.init()
    if cohort.rank() != rank or cohort.size() != size:
        raise RuntimeError(
            "cohort backend: torch.distributed says rank %d of %d but cohort's launcher says rank "
            "%d of %d" % (rank, size, cohort.rank(), cohort.size()))


def _create_process_group(options, pg_options=None):
    """The backend's creator (torch's extended plugin API): the default
    group starts the runtime and uses process set 0; a new group uses the
    set its new_group call added on every rank."""
    ranks = tuple(options.global_ranks_in_group)
    if not ranks:
        _start_runtime(options.store, options.group_rank, options.group_size, options.timeout)
        set_id = 0
    elif not _cohort.is_initialized():
        raise RuntimeError("cohort backend: a group with backend 'cohort' needs the default group "
                           "on 'cohort' too (init_process_group('cohort'))")
    elif len(ranks) == cohort.size():
        set_id = 0
    else:
        pending = _sets_by_ranks.get(tuple(sorted(ranks)))
        if not pending:
            raise RuntimeError("cohort backend: no process set for ranks %s; create groups with "
                               "torch.distributed.new_group after importing "
                               "cohort.torch.distributed" % (list(ranks),))
        set_id = pending.pop(0)
    count = _groups_per_set.get(set_id, 0)
    _groups_per_set[set_id] = count + 1
    # Equal on every member: names the group's operations and its messages.
    return _c10d.create_process_group(options.store, options.group_rank, options.group_size,
                                      options.timeout.total_seconds(), set_id,
                                      "c10d.%d.%d." % (set_id, count), (set_id << 32) | count)


def _uses_cohort(backend):
    if backend is None:
        return dist.is_initialized() and dist.get_backend() == BACKEND
    return str(backend).lower() == BACKEND


_torch_new_group = _c10d_module.new_group


def new_group(ranks=None, timeout=_c10d_module.default_pg_timeout, backend=None,
              pg_options=None, **kwargs):
    """torch.distributed.new_group, plus the cohort process set behind a
    'cohort' group: every rank of the job adds it (torch calls the backend's
    creator on the members only, cohort adds sets on every rank)."""
    if _uses_cohort(backend) and ranks is not None:
        members = sorted(int(r) for r in ranks)
        if len(members) != dist.get_world_size():
            process_set = cohort.add_process_set(members)
            pending = _sets_by_ranks.setdefault(tuple(members), [])
            pending.append(process_set.process_set_id)
            try:
                return _torch_new_group(ranks, timeout, backend, pg_options, **kwargs)
            finally:  # a non-member's torch never asks for the set
                if process_set.process_set_id in pending:
                    pending.remove(process_set.process_set_id)
    return _torch_new_group(ranks, timeout, backend, pg_options, **kwargs)


_torch_monitored_barrier = _c10d_module.monitored_barrier


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """torch.distributed.monitored_barrier, which torch 1.13 allows on gloo
    only, also on 'cohort' groups, with gloo's contract: rank 0 names the
    ranks that did not arrive within `timeout` (0 included: rank 0 then has
    no time to wait), the others report that rank 0 did not answer."""
    if _c10d_module._rank_not_in_group(group) or dist.get_backend(group) != BACKEND:
        return _torch_monitored_barrier(group, timeout, wait_all_ranks)
    group_to_use = _c10d_module._get_default_group() if group is None else group
    if timeout is None:  # not `timeout or ...`: a timedelta of 0 is a timeout too
        timeout = _c10d_module.default_pg_timeout
    return group_to_use.monitored_barrier(timeout, wait_all_ranks=wait_all_ranks)


new_group.__doc__ += "\n\n" + (_torch_new_group.__doc__ or "")
monitored_barrier.__doc__ += "\n\n" + (_torch_monitored_barrier.__doc__ or "")
# new_subgroups and others call new_group through the module.
_c10d_module.new_group = dist.new_group = new_group
_c10d_module.monitored_barrier = dist.monitored_barrier = monitored_barrier
_set_env_defaults_under_cohort_run()
_rendezvous_module._rendezvous_handlers["env"] = _env_rendezvous
if BACKEND.upper() not in dist.Backend._plugins:
    # torch 2.x asks which devices a backend serves: CPU, and CUDA tensors
    # (allreduce and broadcast, what DDP uses; docs/gpu.md). 1.13 has no such argument.
    if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
        dist.Backend.register_backend(BACKEND, _create_process_group, extended_api=True,
                                      devices=["cpu", "cuda"])
    else:
        dist.Backend.register_backend(BACKEND, _create_process_group, extended_api=True)
