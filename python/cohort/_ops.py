"""Framework-neutral core of every collective: turns arrays of some kind
(numpy, torch, ...) into (address, shape, dtype code), submits them to the
engine through cohort._cohort and builds each operation's output when it
completes. GPU arrays (ArrayKind.device) go to the engine with their device
and the caller's stream; their handles synchronize on the caller's stream
(docs/gpu.md).

An `ArrayKind` knows one array type; the front ends (cohort for numpy and
buffers, cohort.torch) pass theirs in. Inputs must already be contiguous (in
host memory, or GPU memory where the kind says so); the front ends make them so."""

import math

from . import _cohort

# Reduce ops (values of cohort::ReduceOp, c_api.h).
Sum, Average, Min, Max, Product, Adasum = 0, 1, 2, 3, 4, 5
OP_NAMES = {Sum: "Sum", Average: "Average", Min: "Min", Max: "Max", Product: "Product",
            Adasum: "Adasum"}

# Data type codes (cohort::DataType).
UINT8, INT8, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64, INT16, BOOL = range(10)
DTYPE_NAMES = ("uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64",
               "int16", "bool")


class ArrayKind:
    """What the core needs to know about one array type."""

    def describe(self, array):
        """(address, shape tuple, dtype code) of a contiguous host array."""
        raise NotImplementedError

    def empty(self, shape, dtype, like):
        """A new contiguous host array of `shape` and dtype code."""
        raise NotImplementedError

    def device(self, array):
        """None for a host array; (CUDA device index, address of the caller's
        current stream on it) for a GPU array."""
        return None

    def current_stream(self, device_index):
        """Address of the caller's current stream on a CUDA device (0: the
        legacy default stream), where a GPU operation's result must be ready
        when synchronize returns."""
        return 0


class _Names:
    """Generated names for unnamed operations. Every rank calls the collectives
    of one kind on one process set in the same order (as Horovod requires of
    unnamed calls), so the n-th unnamed allreduce gets the same name everywhere.
    Each (kind, process set) counts on its own, so an unnamed call that only
    some ranks made (a broadcast on one rank, an operation in a set the others
    are not in) leaves the other kinds' and sets' names in step.

    An operation that failed on every rank of its set (a mismatch found in
    negotiation) is followed by `resync(set)` on each of them: that set's
    counters start again under a new generation, so a suite goes on in step
    after a failed test even when that test had left the counters apart,
    without reusing the names of operations still in flight."""

    def __init__(self):
        self._counters = {}
        self._generations = {}
        # (process set, name) -> engine handle of each operation the caller
        # named, until its handle is waited for (see `take`).
        self._taken = {}
        self._taken_by = {}  # engine handle -> its (process set, name)

    def reset(self):
        """A new runtime: every rank starts its generated names over and
        forgets the old runtime's named operations."""
        self._counters.clear()
        self._generations.clear()
        self._taken.clear()
        self._taken_by.clear()

    def check_free(self, what, name, process_set):
        """Raises ValueError when `name` names an operation this rank
        submitted in `process_set` and has not yet waited for. Horovod
        refuses a name still in its tensor queue; here a name stays taken
        until its handle is synchronized, so whether a second submission
        fails does not depend on how fast the first one completed."""
        if (process_set, name) in self._taken:
            raise ValueError(
                "%s: an operation named '%s' was submitted on rank %d and not yet synchronized; "
                "synchronize its handle before submitting the name again" % (
                    what, name, _cohort.rank()))

    def take(self, name, process_set, handle):
        self._taken[(process_set, name)] = handle
        self._taken_by[handle] = (process_set, name)

    def release(self, handle):
        key = self._taken_by.pop(handle, None)
        if key is not None:
            del self._taken[key]

    def make(self, kind, name, process_set=0):
        if name is not None:
            return name
        key = (kind, process_set)
        n = self._counters.get(key, 0)
        self._counters[key] = n + 1
        prefix = kind + ".noname"
        if process_set:
            prefix += ".set%d" % process_set
        generation = self._generations.get(process_set, 0)
        if generation:
            prefix += ".g%d" % generation
        return "%s.%d" % (prefix, n)

    def resync(self, process_set=0):
        for key in [k for k in self._counters if k[1] == process_set]:
            del self._counters[key]
        self._generations[process_set] = self._generations.get(process_set, 0) + 1


names = _Names()


class Handle:
    """One submitted operation (or a group). `wait()` returns its output;
    `keep` holds the buffers the engine reads and writes until then. Until
    waited on, the handle itself stays referenced by `in_flight` (so a caller
    that drops it cannot free memory the engine still writes to)."""

    # Slots because a training step makes one handle per gradient tensor
    # (issue 11 item 17: attribute stores into a dict cost more).
    __slots__ = ("_process_set", "_local_errors", "_ids", "_keep", "_finish", "_result", "_done",
                 "_runtime", "_stream")
    in_flight = set()
    runtime = 0  # counts init()/shutdown(): a handle is only good in its own runtime

    def __init__(self, ids, keep, finish, process_set=0, local_errors=(), stream=None):
        self._runtime = Handle.runtime
        # GPU operations: a callable giving the stream to synchronize on (the
        # caller's current one when wait() runs); None: a host wait.
        self._stream = stream
        self._process_set = process_set
        self._local_errors = local_errors  # failures of this rank alone: no resync
        self._ids = list(ids)
        self._keep = keep
        self._finish = finish
        self._result = None
        self._done = False
        Handle.in_flight.add(self)

    def then(self, fn):
        """Makes wait() return fn(output) instead of the output."""
        finish = self._finish
        self._finish = lambda ids: fn(finish(ids))
        return self

    def _check_runtime(self):
        if self._runtime != Handle.runtime:
            raise _cohort.CohortError("this handle belongs to a cohort runtime that was shut down "
                                      "(its operation ended with it)")

    def poll(self):
        if not self._done:
            self._check_runtime()
        return self._done or all(_cohort.poll(h) for h in self._ids)

    def wait(self):
        if self._done:
            return self._result
        self._check_runtime()
        try:
            for h in self._ids:
                if self._stream is None:
                    _cohort.wait(h)
                else:
                    _cohort.synchronize_on_stream(h, self._stream())
            self._result = self._finish(self._ids)
        except _cohort.CohortError as e:
            # The engine fails a mismatched operation on every rank of its
            # set, so each of them starts the names over here.
            if not isinstance(e, self._local_errors):
                names.resync(self._process_set)
            raise
        finally:
            for h in self._ids:
                _cohort.release(h)
                if names._taken_by:
                    names.release(h)
            self._done = True
            self._keep = None
            Handle.in_flight.discard(self)
        return self._result


def _output_from(kind, handle_id, dtype, like):
    """The engine-held output of a completed operation as a new array."""
    result = _cohort.take_result(handle_id)
    out = kind.empty(tuple(result.shape), dtype, like)
    address, _, _ = kind.describe(out)
    result.copy_to(address, result.nbytes)
    return out, result


def reset():
    """Called at init() and shutdown(): the new runtime shares nothing with
    the old one, so every rank names its operations from the start again
    (a test that failed half-way on one rank cannot shift the next test's
    names) and the old runtime's handles are dropped."""
    names.reset()
    Handle.in_flight.clear()
    Handle.runtime += 1


def _gpu(kind, array):
    """(device argument, stream callable) for a GPU array; (None, None) for a host one."""
    device = kind.device(array)
    if device is None:
        return None, None
    index = device[0]
    return device, (lambda: kind.current_stream(index))


def _op_name(what, name, process_set):
    """The operation's name (generated when None), after checking that this
    rank is a member of `process_set` (Horovod raises on a rank outside it)
    and that a name the caller gave is not in use (see _Names.check_free)."""
    if process_set and _cohort.process_set_rank(process_set) < 0:
        raise ValueError("%s: rank %d is not a member of process set %d (ranks %s)" % (
            what, _cohort.rank(), process_set, _cohort.process_set_ranks(process_set)))
    if name is not None:
        names.check_free(what, name, process_set)
    return names.make(what, name, process_set)


def _named(handle, name, process_set):
    """Marks a caller-named operation's name taken until `handle` is waited for."""
    if name is not None:
        names.take(name, process_set, handle)
    return handle


def set_position(root_rank, process_set, what):
    """The position in `process_set` of the global rank `root_rank` (the
    engine numbers a set's ranks 0..n-1; the API takes global ranks)."""
    root_rank = int(root_rank)
    if not process_set:
        return root_rank
    ranks = _cohort.process_set_ranks(process_set)
    if root_rank not in ranks:
        raise ValueError("%s: root_rank %d is not a member of process set %d (ranks %s)" % (
            what, root_rank, process_set, ranks))
    return ranks.index(root_rank)


def allreduce_async(kind, send, recv, name=None, op=Average, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=0, output=None):
    """recv = op over ranks of send (recv may be send: in place). wait() returns
    `output` when given (the caller's tensor that `recv` is), else `recv`.
    The hot path of a training step: one describe when in place, the shape
    passed as the tuple it is (issue 11 item 17). The engine's wire compression
    is a C/C++ option, not bound here; from Python, compression is Horovod's
    Compression classes (cohort.torch.Compression), applied to the tensor
    before and after."""
    s_addr, shape, dtype = kind.describe(send)
    if recv is send:
        r_addr = s_addr
    else:
        r_addr, r_shape, r_dtype = kind.describe(recv)
        if r_shape != shape or r_dtype != dtype:
            raise ValueError("allreduce: output shape/dtype %s/%s differs from input %s/%s" % (
                r_shape, DTYPE_NAMES[r_dtype], shape, DTYPE_NAMES[dtype]))
    device, stream = _gpu(kind, send)
    h = _named(_cohort.allreduce_async(_op_name("allreduce", name, process_set), s_addr, r_addr,
                                       shape, dtype, int(op), float(prescale_factor),
                                       float(postscale_factor), int(process_set), device),
               name, process_set)
    result = recv if output is None else output
    return Handle((h,), (send, recv), lambda ids: result, process_set, stream=stream)


def grouped_allreduce_async(kind, sends, recvs, name=None, op=Average, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=0):
    """One negotiation per dtype for a list of tensors; output is the list `recvs`."""
    if len(sends) != len(recvs):
        raise ValueError("grouped allreduce: %d inputs but %d outputs" % (len(sends), len(recvs)))
    base = _op_name("grouped_allreduce", name, process_set)
    s_desc = [kind.describe(t) for t in sends]
    r_desc = [kind.describe(t) for t in recvs]
    ids = [None] * len(sends)
    device, stream = _gpu(kind, sends[0]) if sends else (None, None)
    for dtype in sorted({d for _, _, d in s_desc}):
        members = [i for i, (_, _, d) in enumerate(s_desc) if d == dtype]
        got = _cohort.grouped_allreduce_async(
            ["%s.%d" % (base, i) for i in members], [s_desc[i][0] for i in members],
            [r_desc[i][0] for i in members], [list(s_desc[i][1]) for i in members], dtype,
            int(op), float(prescale_factor), float(postscale_factor), int(process_set), device)
        for i, h in zip(members, got):
            ids[i] = h
    return Handle(ids, (sends, recvs), lambda ids: list(recvs), process_set, stream=stream)


def broadcast_async(kind, buf, root_rank, name=None, process_set=0):
    """Root's `buf` into every rank's `buf` (in place); root_rank is a global rank."""
    addr, shape, dtype = kind.describe(buf)
    root = set_position(root_rank, process_set, "broadcast")
    device, stream = _gpu(kind, buf)
    h = _named(_cohort.broadcast_async(_op_name("broadcast", name, process_set), addr,
                                       list(shape), dtype, root, int(process_set), device),
               name, process_set)
    return Handle([h], buf, lambda ids: buf, process_set, stream=stream)


def _describe_output(kind, out, dtype, shape, what):
    """(address, element count) of a caller's output array, after checking
    its dtype and that its shape is `shape` (None in the first place: any)."""
    o_addr, o_shape, o_dtype = kind.describe(out)
    if o_dtype != dtype:
        raise ValueError("%s: output dtype %s differs from the input's %s" % (
            what, DTYPE_NAMES[o_dtype], DTYPE_NAMES[dtype]))
    if len(o_shape) != len(shape) or any(w is not None and w != g for g, w in zip(o_shape, shape)):
        raise ValueError("%s: output shape %s, expected [%s]" % (
            what, list(o_shape), ", ".join("any" if w is None else str(w) for w in shape)))
    return o_addr, math.prod(o_shape)


def allgather_async(kind, send, name=None, process_set=0, out=None):
    """Ranks' tensors concatenated along the first dimension; written into
    `out` when given (a contiguous array the caller reuses; its first
    dimension must be the ranks' rows together, else wait() raises, and it may
    hold `send` at this rank's rows: in place)."""
    addr, shape, dtype = kind.describe(send)
    if out is None:
        h = _named(_cohort.allgather_async(_op_name("allgather", name, process_set), addr,
                                           list(shape), dtype, int(process_set)),
                   name, process_set)
        return Handle([h], send, lambda ids: _output_from(kind, ids[0], dtype, send)[0],
                      process_set)
    o_addr, o_count = _describe_output(kind, out, dtype, (None,) + tuple(shape[1:]), "allgather")
    device, stream = _gpu(kind, send)
    h = _named(_cohort.allgather_into_async(_op_name("allgather", name, process_set), addr,
                                            list(shape), dtype, o_addr, o_count,
                                            int(process_set), device),
               name, process_set)
    # A wrong-sized `out` fails here alone (the collective ran everywhere).
    return Handle([h], (send, out), lambda ids: out, process_set,
                  local_errors=_cohort.CohortValueError, stream=stream)


def scatter_rows(rows, recv_rows, size, position):
    """The rows position `position` of a set of `size` receives in a
    reduce-scatter of `rows` rows (recv_rows: explicit, else an even split)."""
    if recv_rows:
        return int(recv_rows[position])
    return rows // size + (1 if position < rows % size else 0)


def reducescatter_async(kind, send, name=None, op=Average, recv_rows=(), process_set=0,
                        prescale_factor=1.0, postscale_factor=1.0, out=None):
    """This rank's block of the first dimension of postscale * op over ranks of
    (prescale * `send`); the engine scales (one path for every binding).
    Written into `out` when given (a contiguous array of exactly the block's
    shape, which may lie inside `send` at the block: in place)."""
    addr, shape, dtype = kind.describe(send)
    recv_rows = [int(r) for r in recv_rows]
    if out is None:
        h = _named(_cohort.reducescatter_async(
            _op_name("reducescatter", name, process_set), addr, list(shape), dtype, int(op),
            recv_rows, int(process_set), float(prescale_factor), float(postscale_factor)),
            name, process_set)
        return Handle([h], send, lambda ids: _output_from(kind, ids[0], dtype, send)[0],
                      process_set)
    position = max(_cohort.process_set_rank(process_set), 0)  # a non-member: _op_name raises
    size = len(_cohort.process_set_ranks(process_set))
    if recv_rows and len(recv_rows) != size:
        raise ValueError("reducescatter: %d recv_rows for %d ranks" % (len(recv_rows), size))
    block = (scatter_rows(shape[0], recv_rows, size, position),) + tuple(shape[1:])
    o_addr, o_count = _describe_output(kind, out, dtype, block, "reducescatter")
    device, stream = _gpu(kind, send)
    h = _named(_cohort.reducescatter_into_async(
        _op_name("reducescatter", name, process_set), addr, list(shape), dtype, int(op),
        recv_rows, int(process_set), float(prescale_factor), float(postscale_factor), o_addr,
        o_count, device), name, process_set)
    return Handle([h], (send, out), lambda ids: out, process_set, stream=stream)


def alltoall_async(kind, send, splits, name=None, process_set=0):
    """Sends splits[p] rows to rank p; output is (rows received, rows per rank)."""
    addr, shape, dtype = kind.describe(send)
    h = _named(_cohort.alltoall_async(_op_name("alltoall", name, process_set), addr,
                                      list(shape), dtype, [int(s) for s in splits],
                                      int(process_set)),
               name, process_set)

    def finish(ids):
        out, result = _output_from(kind, ids[0], dtype, send)
        return out, list(result.splits)

    return Handle([h], send, finish, process_set)


# Every barrier of a process set has this one name, as Horovod's do: a rank's
# barrier meets the others' whatever else each rank did (or skipped) before,
# so a barrier after a test that failed half-way on some ranks still lines
# them up. Only one barrier per set can be in flight on a rank.
BARRIER_NAME = "barrier.noname"


def barrier_async(process_set=0):
    h = _cohort.barrier_async(_op_name("barrier", BARRIER_NAME, process_set), int(process_set))
    return Handle([h], None, lambda ids: None, process_set)


def join_async():
    h = _cohort.join_async()
    return Handle([h], None, lambda ids: int(_cohort.take_result(ids[0]).last_joined_rank))


def even_splits(rows, parts, what):
    """Horovod's default alltoall split: equal blocks, or a ValueError."""
    if parts <= 0 or rows % parts != 0:
        raise ValueError("%s: the first dimension (%d) is not divisible by the number of ranks "
                         "(%d); pass splits" % (what, rows, parts))
    return [rows // parts] * parts
