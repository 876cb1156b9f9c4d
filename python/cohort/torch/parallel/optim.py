"""The data-parallel dimension of a Mesh: an optimizer whose gradients are
averaged over mesh.dp (each rank's replicas of the same stage and tensor
slice), plainly or with ZeRO's sharded optimizer state."""
from ..optimizer import DistributedOptimizer
from ..zero import ZeroRedundancyOptimizer


def data_parallel_optimizer(optimizer, mesh, named_parameters=None, zero=0, **kwargs):
    """Wraps `optimizer` (over this rank's parameters, e.g. a Pipeline's) so
    that step() first averages the gradients over the mesh's dp set, through
    the engine (fused): zero=0 a DistributedOptimizer; zero=1 or 2 a
    ZeroRedundancyOptimizer of that stage over the same parameter groups and
    hyper-parameters, each dp rank keeping 1/dp of the optimizer state (and
    with 2 of the gradients). With dp=1 the optimizer is returned as it is.
    kwargs go to the wrapper (compression=, bucket_cap_mb=, ...)."""
    if zero not in (0, 1, 2):
        raise ValueError("data_parallel_optimizer: zero must be 0, 1 or 2, got %r" % (zero,))
    if mesh.dp.size == 1:
        return optimizer
    process_set = mesh.dp.process_set
    if zero:
        groups = [dict(g) for g in optimizer.param_groups]
        return ZeroRedundancyOptimizer(groups, type(optimizer), process_set=process_set,
                                       stage=zero, **kwargs, **optimizer.defaults)
    return DistributedOptimizer(optimizer, named_parameters=named_parameters,
                                process_set=process_set, **kwargs)
