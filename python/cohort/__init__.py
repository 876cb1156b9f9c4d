"""cohort: distributed training runtime. Framework-neutral API (numpy arrays
and any buffer); `cohort.torch` is the Horovod-compatible PyTorch front end.

    import cohort
    cohort.init()
    total = cohort.allreduce(np.ones(4), op=cohort.Sum)   # every rank: size * 1

Every collective is called by every rank of the process set with matching
arguments; a mismatch raises CohortError (a RuntimeError) on every rank.

The compiled extension modules live in the build tree (<build>/python/cohort);
COHORT_BUILD_DIR picks the build (default: the repository's build/). Installed
with pip (pyproject.toml), the package carries its extension modules, libcohort.so
and the `cohort` launcher (bin/cohort) itself."""
import os as _os

from . import settings as _settings

_here = _os.path.dirname(_os.path.abspath(__file__))
_installed = _os.path.isfile(_os.path.join(_here, "bin", "cohort"))
if _installed and not _settings.is_set(_settings.BUILD_DIR):
    _build = None
    _launcher_path = _os.path.join(_here, "bin", "cohort")
else:
    _repo = _os.path.dirname(_os.path.dirname(_here))
    _build = _settings.text(_settings.BUILD_DIR, _os.path.join(_repo, "build"))
    _launcher_path = _os.path.join(_build, "cohort")
    __path__.append(_os.path.join(_build, "python", "cohort"))

from ._cohort import (CohortError, CohortValueError, is_initialized,  # noqa: E402
                      stop_timeline)
from ._ops import Sum, Average, Min, Max, Product, Adasum  # noqa: E402
from .process_sets import (ProcessSet, global_process_set, add_process_set,  # noqa: E402
                           remove_process_set)
from .runner import run  # noqa: E402
from .shared_memory import SharedMemory, shared_array  # noqa: E402
from . import _cohort, _ops, _numpy  # noqa: E402
from .process_sets import set_id as _set_id, set_size as _set_size  # noqa: E402


def _topology_query(name, doc):
    query = getattr(_cohort, name)

    def ask():
        value = query()
        if value < 0:
            raise ValueError("cohort has not been initialized; call init() first (%s)" % name)
        return value

    ask.__name__, ask.__doc__ = name, doc
    return ask


rank = _topology_query("rank", "This process's rank in the job.")
size = _topology_query("size", "Number of ranks in the job.")
local_rank = _topology_query("local_rank", "This rank's index among the ranks on its host.")
local_size = _topology_query("local_size", "Number of ranks on this host.")
cross_rank = _topology_query("cross_rank", "Index of this host among the job's hosts.")
cross_size = _topology_query("cross_size", "Number of hosts in the job.")
_single_copy = _topology_query("shm_single_copy", "")


def shm_single_copy():
    """True when large collectives among the ranks of this host copy each
    byte once, straight between their memories (COHORT_SHM_SINGLE_COPY and
    the kernel allow it); False when they copy through shared memory twice."""
    return _single_copy() == 1


def _abort_on_uncaught_exception(hook):
    """A sys.excepthook that, after `hook` printed the traceback, leaves the
    job at once: the other ranks fail with this rank's reason instead of
    waiting for COHORT_TIMEOUT, and this process exits without the collective
    shutdown its peers would never join (a worker interrupted by Ctrl-C exits
    promptly)."""
    def excepthook(exc_type, exc, tb):
        hook(exc_type, exc, tb)
        if _cohort.is_initialized():
            what = exc_type.__name__ + (": %s" % exc if str(exc) else "")
            _cohort.abort("uncaught %s in its script" % what)
    excepthook.cohort_abort = True
    return excepthook


def init(process_sets=None):
    """Starts the runtime from the launcher's environment (`cohort run`, srun,
    mpirun, torchrun; without one, a job of one process) and registers
    `process_sets` (ProcessSet objects) on every rank. Calling it again while
    running does nothing (like Horovod). After the engine stopped for good (a
    rank called shutdown(), the job failed, ranks deadlocked: operations then
    fail at once) it starts a new runtime, as after shutdown()."""
    import sys
    if not getattr(sys.excepthook, "cohort_abort", False):
        sys.excepthook = _abort_on_uncaught_exception(sys.excepthook)
    if not _cohort.is_running():
        _ops.reset()  # any old runtime's engine has stopped: nothing writes into its buffers
        _cohort.init()
    for ps in process_sets or ():
        if ps.process_set_id is None:
            add_process_set(ps)


def shutdown():
    """Stops the runtime. Every rank's engine stops with it (as Horovod's
    shutdown does): operations other ranks still wait for fail at once,
    naming this rank, and their next init() starts a new runtime."""
    _cohort.shutdown()
    _ops.reset()  # after: the engine no longer writes into the dropped handles' buffers


def engine_stats():
    """This rank's engine counters since it started (all zero before), over every
    process set: cycles (negotiation rounds that agreed on collectives),
    allreduces (a fused one counts once), allreduced_tensors, and of those the
    fused_allreduces (more than one tensor), fused_tensors and fused_bytes."""
    return _cohort.engine_stats()


def start_timeline(file_path, mark_cycles=False):
    """Writes a Chrome-trace timeline of every operation's phases to
    file_path ("{rank}" in it: one file per rank, otherwise rank 0 writes).
    mark_cycles also marks the start of every engine cycle (CYCLE_START)."""
    _cohort.start_timeline_marking_cycles(str(file_path), bool(mark_cycles))


def allreduce(array, op=Average, name=None, prescale_factor=1.0, postscale_factor=1.0,
              process_set=global_process_set):
    """A new array: postscale * op over ranks of (prescale * array)."""
    send = _numpy.as_array(array, "allreduce")
    recv = _numpy.KIND.empty(send.shape, _numpy.dtype_code(send.dtype), send)
    return _ops.allreduce_async(_numpy.KIND, send, recv, name, op, prescale_factor,
                                postscale_factor, _set_id(process_set)).wait()


def allreduce_(array, op=Average, name=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set):
    """In place on a writable C-contiguous numpy array; returns it."""
    _require_inplace(array, "allreduce_")
    return _ops.allreduce_async(_numpy.KIND, array, array, name, op, prescale_factor,
                                postscale_factor, _set_id(process_set)).wait()


def grouped_allreduce(arrays, op=Average, name=None, prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set):
    sends = [_numpy.as_array(a, "grouped_allreduce") for a in arrays]
    recvs = [_numpy.KIND.empty(s.shape, _numpy.dtype_code(s.dtype), s) for s in sends]
    return _ops.grouped_allreduce_async(_numpy.KIND, sends, recvs, name, op, prescale_factor,
                                        postscale_factor, _set_id(process_set)).wait()


def allgather(array, name=None, process_set=global_process_set):
    """Every rank's array concatenated along the first dimension (which may differ)."""
    send = _numpy.as_array(array, "allgather")
    if send.ndim == 0:
        send = send.reshape(1)
    return _ops.allgather_async(_numpy.KIND, send, name, _set_id(process_set)).wait()


def broadcast(array, root_rank, name=None, process_set=global_process_set):
    """A new array holding root_rank's array."""
    buf = _numpy.as_array(array, "broadcast").copy()
    return _ops.broadcast_async(_numpy.KIND, buf, root_rank, name, _set_id(process_set)).wait()


def broadcast_(array, root_rank, name=None, process_set=global_process_set):
    """root_rank's array into this writable C-contiguous numpy array; returns it."""
    _require_inplace(array, "broadcast_")
    return _ops.broadcast_async(_numpy.KIND, array, root_rank, name, _set_id(process_set)).wait()


def alltoall(array, splits=None, name=None, process_set=global_process_set):
    """Sends splits[p] rows to rank p (default: equal blocks). Returns
    (rows received in rank order, rows received from each rank)."""
    send = _numpy.as_array(array, "alltoall")
    if splits is None:
        splits = _ops.even_splits(send.shape[0] if send.ndim else 1, _set_size(process_set),
                                  "alltoall")
    return _ops.alltoall_async(_numpy.KIND, send, list(splits), name, _set_id(process_set)).wait()


def reducescatter(array, op=Average, name=None, process_set=global_process_set):
    """This rank's block of the first dimension of op over ranks (the first
    rows % size ranks get one row more)."""
    send = _numpy.as_array(array, "reducescatter")
    return _ops.reducescatter_async(_numpy.KIND, send, name, op, (),
                                    _set_id(process_set)).wait()


def barrier(process_set=global_process_set):
    _ops.barrier_async(_set_id(process_set)).wait()


def join():
    """Marks this rank as out of data; returns the last rank to join."""
    return _ops.join_async().wait()


def _require_inplace(array, what):
    import numpy as np
    if not isinstance(array, np.ndarray) or not array.flags.c_contiguous or \
            not array.flags.writeable:
        raise ValueError("%s: needs a writable C-contiguous numpy array" % what)
