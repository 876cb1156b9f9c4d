"""The collectives the compressing reducers (powersgd.py, topk.py) need, over
cohort's engine (DistributedOptimizer) or a torch.distributed process group
(DDP comm hooks): an average in place, an average started now and finished
later, and an allgather of equal-sized tensors."""
import torch


def _flat(tensors):
    return torch.cat([t.reshape(-1) for t in tensors])


def _unflatten_into(flat, tensors):
    at = 0
    for t in tensors:
        t.copy_(flat[at:at + t.numel()].view_as(t))
        at += t.numel()


class EngineComm:
    """Through cohort's engine, among the ranks of `process_set`."""

    def __init__(self, process_set):
        from ..process_sets import global_process_set
        self.process_set = process_set if process_set is not None else global_process_set
        self.size = self.process_set.size()

    def allreduce_mean(self, tensor, name):
        from .mpi_ops import Average, allreduce_
        return allreduce_(tensor, name="compression." + name, op=Average,
                          process_set=self.process_set)

    def allreduce_mean_into(self, tensors, name):
        """Starts averaging `tensors` (in one buffer); the returned function
        waits and writes the averages back into them."""
        if not tensors:
            return lambda: None
        from .mpi_ops import Average, allreduce_async_, synchronize
        flat = _flat(tensors)
        handle = allreduce_async_(flat, name="compression." + name, op=Average,
                                  process_set=self.process_set)

        def wait():
            _unflatten_into(synchronize(handle), tensors)
        return wait

    def allgather(self, tensors, name):
        from .mpi_ops import grouped_allgather
        return grouped_allgather(tensors, name="compression." + name,
                                 process_set=self.process_set)


class C10dComm:
    """Through torch.distributed, in process group `group` (None: the
    default group), whatever its backend."""

    def __init__(self, group=None):
        import torch.distributed as dist
        self.dist = dist
        self.group = group
        self.size = dist.get_world_size(group)

    def allreduce_mean(self, tensor, name):
        self.dist.all_reduce(tensor, group=self.group)
        return tensor.div_(self.size)

    def allreduce_mean_into(self, tensors, name):
        if not tensors:
            return lambda: None
        flat = _flat(tensors)
        work = self.dist.all_reduce(flat, group=self.group, async_op=True)

        def wait():
            work.wait()
            _unflatten_into(flat.div_(self.size), tensors)
        return wait

    def allgather(self, tensors, name):
        out = []
        for t in tensors:
            parts = [torch.empty_like(t) for _ in range(self.size)]
            self.dist.all_gather(parts, t.contiguous(), group=self.group)
            out.append(torch.cat(parts))
        return out
