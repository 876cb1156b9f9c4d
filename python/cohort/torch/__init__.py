"""cohort.torch: the Horovod-compatible PyTorch front end. A Horovod script
runs after changing one line: `import cohort.torch as hvd`.

Nothing here is compiled against torch: tensors reach the engine as address,
dtype and shape, so one build of cohort serves every torch version."""
from .. import (init, shutdown, is_initialized, rank, size, local_rank, local_size,  # noqa: F401
                cross_rank, cross_size, start_timeline, stop_timeline, CohortError,
                CohortValueError)
from ..process_sets import (ProcessSet, global_process_set, add_process_set,  # noqa: F401
                            remove_process_set)
from .compression import Compression  # noqa: F401
from .functions import (broadcast_parameters, broadcast_optimizer_state,  # noqa: F401
                        broadcast_object, allgather_object)
from .exceptions import HorovodInternalError, HostsUpdatedInterrupt  # noqa: F401
from .mpi_ops import (Sum, Average, Min, Max, Product, Adasum, poll,  # noqa: F401
                      synchronize, allreduce, allreduce_, allreduce_async, allreduce_async_,
                      sparse_allreduce_async,
                      grouped_allreduce, grouped_allreduce_, grouped_allreduce_async,
                      grouped_allreduce_async_, allgather, allgather_async, grouped_allgather,
                      grouped_allgather_async, broadcast, broadcast_, broadcast_async,
                      broadcast_async_, alltoall, alltoall_async, reducescatter,
                      reducescatter_async, grouped_reducescatter, grouped_reducescatter_async,
                      join, barrier)
from .optimizer import DistributedOptimizer  # noqa: F401
from .shared_memory import shared_zeros, share_gradients  # noqa: F401
from .queries import (size_op, rank_op, local_rank_op, local_size_op,  # noqa: F401
                      process_set_included_op)
from .sync_batch_norm import SyncBatchNorm  # noqa: F401
from ..capabilities import (mpi_built, mpi_enabled, mpi_threads_supported,  # noqa: F401
                            gloo_built, gloo_enabled, nccl_built, ddl_built, ccl_built,
                            cuda_built, rocm_built, is_homogeneous)

from .zero import ZeroRedundancyOptimizer  # noqa: F401,E402
from .fsdp import FullyShardedDataParallel  # noqa: F401,E402
from . import elastic  # noqa: F401,E402  (hvd.elastic, as horovod.torch.elastic)
from . import parallel  # noqa: F401,E402  (model parallelism: docs/model-parallel.md)
from .parallel import Mesh  # noqa: F401,E402
