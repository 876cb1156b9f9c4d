"""The collectives the compressing reducers (powersgd.py, topk.py,
host_reduction.py) need, over cohort's engine (DistributedOptimizer) or a
torch.distributed process group (DDP comm hooks): averages and sums in place,
an allgather of equal-sized tensors and a broadcast. Each starts the
collective and returns a Pending (poll() without blocking, wait() for the
result), so a reducer written as a generator of Pendings (see drive()) can be
advanced during backward and finished at synchronize()."""
import torch


def _flat(tensors):
    return torch.cat([t.reshape(-1) for t in tensors])


def _unflatten_into(flat, tensors):
    at = 0
    for t in tensors:
        t.copy_(flat[at:at + t.numel()].view_as(t))
        at += t.numel()


class Pending:
    """A collective under way: poll() says whether wait() would return at
    once; wait() returns its result (then() maps it, once)."""

    def __init__(self, poll, wait):
        self._poll, self._wait = poll, wait

    def poll(self):
        return self._poll()

    def wait(self):
        return self._wait()


DONE = Pending(lambda: True, lambda: None)


def _from_handle(handle, finish=lambda out: out):
    return Pending(handle.poll, lambda: finish(handle.wait()))


class Stages:
    """One reduction written as a generator that yields Pendings and is sent
    each one's result: progress() advances it as far as it can without
    blocking, finish() to its end. Running it at once (finish() right after
    construction) or in steps gives the same results: the same collectives
    on the same data, only when they start differs."""

    def __init__(self, generator):
        self._gen = generator
        self._pending = None
        self.done = False
        self._advance(None)

    def _advance(self, value):
        try:
            self._pending = self._gen.send(value)
        except StopIteration:
            self._pending, self.done = None, True

    def progress(self):
        while not self.done and self._pending.poll():
            self._advance(self._pending.wait())

    def finish(self):
        while not self.done:
            self._advance(self._pending.wait())


def drive(generator):
    """Runs a reducer's generator to its end, waiting on each collective."""
    Stages(generator).finish()


class EngineComm:
    """Through cohort's engine, among the ranks of `process_set`."""

    def __init__(self, process_set):
        from ..process_sets import global_process_set
        self.process_set = process_set if process_set is not None else global_process_set
        self.size = self.process_set.size()

    def allreduce_mean_async(self, tensor, name):
        """Starts averaging `tensor` in place; wait() returns it."""
        from .mpi_ops import Average, allreduce_async_
        return _from_handle(allreduce_async_(tensor, name="compression." + name, op=Average,
                                             process_set=self.process_set))

    def allreduce_mean_into(self, tensors, name):
        """Starts averaging `tensors` (in one buffer); wait() writes the
        averages back into them."""
        if not tensors:
            return DONE
        from .mpi_ops import Average, allreduce_async_
        flat = _flat(tensors)
        handle = allreduce_async_(flat, name="compression." + name, op=Average,
                                  process_set=self.process_set)
        return _from_handle(handle, lambda out: _unflatten_into(out, tensors))

    def grouped_allreduce_into(self, tensors, name, average):
        """Starts summing (or averaging) `tensors` in place: one grouped
        allreduce, fused by the engine without a copy here."""
        if not tensors:
            return DONE
        from .mpi_ops import Average, Sum, grouped_allreduce_async_
        return _from_handle(grouped_allreduce_async_(
            tensors, name="compression." + name, op=Average if average else Sum,
            process_set=self.process_set))

    def broadcast_into(self, tensors, root_rank, name):
        """Starts copying job rank `root_rank`'s `tensors` into everyone's."""
        if not tensors:
            return DONE
        from .mpi_ops import broadcast_async_
        flat = _flat(tensors)
        handle = broadcast_async_(flat, root_rank, name="compression." + name,
                                  process_set=self.process_set)
        return _from_handle(handle, lambda out: _unflatten_into(out, tensors))

    def reducescatter_sum_into(self, flat, sizes, out, name):
        """Starts summing the 1-D `flat` over the ranks, rank i of the set
        receiving elements sum(sizes[:i]) onwards, sizes[i] of them, into
        `out` (which may be that block of `flat`: in place)."""
        from .. import _ops
        from .mpi_ops import KIND, Sum
        from ..process_sets import set_id
        return _from_handle(_ops.reducescatter_async(
            KIND, flat, "compression." + name, Sum, sizes, set_id(self.process_set), out=out))

    def allgather_into(self, block, out, name):
        """Starts gathering every rank's 1-D `block` (sizes may differ), the
        set's first rank's first, into `out` (which may hold `block` at this
        rank's place: in place)."""
        from .mpi_ops import allgather_async
        return _from_handle(allgather_async(block, name="compression." + name,
                                            process_set=self.process_set, output=out))

    def allgather_async(self, tensors, name):
        """Starts gathering `tensors` (each the same size on every rank);
        wait() returns the gathered tensors, rank 0's rows first."""
        from .mpi_ops import grouped_allgather_async
        return _from_handle(grouped_allgather_async(tensors, name="compression." + name,
                                                    process_set=self.process_set))


class C10dComm:
    """Through torch.distributed, in process group `group` (None: the
    default group), whatever its backend."""

    def __init__(self, group=None):
        import torch.distributed as dist
        self.dist = dist
        self.group = group
        self.size = dist.get_world_size(group)

    def _pending(self, works, finish):
        return Pending(lambda: all(w.is_completed() for w in works),
                       lambda: ([w.wait() for w in works], finish())[1])

    def allreduce_mean_async(self, tensor, name):
        work = self.dist.all_reduce(tensor, group=self.group, async_op=True)
        return self._pending([work], lambda: tensor.div_(self.size))

    def allreduce_mean_into(self, tensors, name):
        if not tensors:
            return DONE
        flat = _flat(tensors)
        work = self.dist.all_reduce(flat, group=self.group, async_op=True)
        return self._pending([work], lambda: _unflatten_into(flat.div_(self.size), tensors))

    def allgather_async(self, tensors, name):
        works, parts = [], []
        for t in tensors:
            parts.append([torch.empty_like(t) for _ in range(self.size)])
            works.append(self.dist.all_gather(parts[-1], t.contiguous(), group=self.group,
                                              async_op=True))
        return self._pending(works, lambda: [torch.cat(p) for p in parts])
