// The staged transport's hierarchical allreduce (staged_collectives.h has
// the algorithm).
#include "collectives/collectives.h"
#include "collectives/reduce_kernels.h"
#include "gpu/stream.h"
#include "gpu/transport/ipc_collectives.h"
#include "gpu/transport/staged_collectives.h"

namespace cohort::gpu {

Status StagedHierarchicalAllreduce(IpcPeers& local, Communicator& cross, int world, GpuRun& run,
                                   StagingBuffers& staging, DevicePtr send, DevicePtr recv,
                                   size_t count, const ReduceSpec& spec) {
  const int n = local.size(), me = local.me();
  const size_t esize = DataTypeSize(spec.type);
  // Slice l of the tensor: near-equal blocks, the first count % n one longer.
  std::vector<size_t> slices(n, count / n);
  for (size_t l = 0; l < count % n; ++l) ++slices[l];
  const size_t mine = slices[me] * esize;

  Result<DevicePtr> slice = staging.Device(run.api, std::max<size_t>(mine, 1));
  if (!slice.ok()) return local.comm().Fail(slice.status().WithContext("staging on the device"));
  ReduceSpec partial = spec;
  partial.finish = false;
  COHORT_RETURN_IF_ERROR(IpcReduceScatter(local, run, send, *slice, slices, partial));

  Result<unsigned char*> host = staging.Host(run.api, std::max<size_t>(mine, 1));
  if (!host.ok()) return cross.Fail(host.status().WithContext("staging in pinned host memory"));
  COHORT_RETURN_IF_ERROR(run.api.CopyAsync(AsDevicePtr(*host), *slice, mine, run.stream));
  Status copied = SynchronizeStream(run.api, run.stream, run.sync_event, cross.CallDeadline(),
                                    "copying a host's partial sum to host memory",
                                    [&cross] { return cross.failure(); });
  if (!copied.ok()) return cross.Fail(copied);
  // Across hosts: the partial sums combine with the op itself (sum for the
  // average, whose division by the job's size comes last, as on the CPU path).
  const ReduceOp across = spec.op == ReduceOp::kAverage ? ReduceOp::kSum : spec.op;
  COHORT_RETURN_IF_ERROR(
      RunAllreduce(cross, *host, *host, slices[me], spec.type, across, 1.0, 1.0));
  FinishReduction(*host, slices[me], spec.type, spec.op, world, spec.postscale);
  COHORT_RETURN_IF_ERROR(run.api.CopyAsync(*slice, AsDevicePtr(*host), mine, run.stream));
  return IpcAllgather(local, run, *slice, recv, slices, spec.type);
}

}  // namespace cohort::gpu
