// The staged transport: device data through pinned host memory and cohort's
// CPU collectives (shared memory on a host, TCP between hosts), so GPU
// tensors cross hosts without NCCL, and every op the CPU path has (Adasum
// included) works on them with its exact semantics.
//
// Flat (every rank stages its whole tensor): copy device -> pinned host,
// wait (bounded), run the CPU collective over the whole job, copy back.
// Hierarchical allreduce (several hosts, the same number L > 1 of ranks on
// each, CUDA IPC on every host): reduce-scatter within the host over IPC
// (local rank l ends with slice l of the host's sum), stage slice l to host
// memory, allreduce it among the ranks with local rank l across hosts (the
// CPU path, L independent rings each on 1/L of the data), finish (average,
// postscale) on the host, copy back, allgather the slices within the host
// over IPC. Only 1/L of the tensor crosses the PCIe bus per rank.
//
// The pinned buffer is written by the host only after a wait that covers
// every copy queued before on the stream, and its copy back to the device is
// queued (not waited for): the stream orders it before anything later.
#ifndef COHORT_GPU_TRANSPORT_STAGED_COLLECTIVES_H_
#define COHORT_GPU_TRANSPORT_STAGED_COLLECTIVES_H_

#include <vector>

#include "collectives/communicator.h"
#include "gpu/device_memory.h"
#include "gpu/device_reduce.h"
#include "gpu/transport/gpu_run.h"
#include "gpu/transport/ipc_peers.h"

namespace cohort::gpu {

// Buffers the staged transport keeps between calls, grown on demand.
class StagingBuffers {
 public:
  Result<unsigned char*> Host(CudaApi& api, size_t bytes);
  Result<DevicePtr> Device(CudaApi& api, size_t bytes);

 private:
  PinnedBuffer host_;
  DeviceBuffer device_;
};

Status StagedAllreduce(Communicator& comm, GpuRun& run, StagingBuffers& staging, DevicePtr send,
                       DevicePtr recv, size_t count, const ReduceSpec& spec);
// `local`: IPC among this host's ranks; `cross`: the ranks with this rank's
// local rank on every host. `world`: the job's rank count (the average's divisor).
Status StagedHierarchicalAllreduce(IpcPeers& local, Communicator& cross, int world, GpuRun& run,
                                   StagingBuffers& staging, DevicePtr send, DevicePtr recv,
                                   size_t count, const ReduceSpec& spec);
Status StagedReduceScatter(Communicator& comm, GpuRun& run, StagingBuffers& staging, DevicePtr send,
                           DevicePtr recv, const std::vector<size_t>& counts,
                           const ReduceSpec& spec);
Status StagedAllgather(Communicator& comm, GpuRun& run, StagingBuffers& staging, DevicePtr send,
                       DevicePtr recv, const std::vector<size_t>& counts, DataType type);
Status StagedBroadcast(Communicator& comm, GpuRun& run, StagingBuffers& staging, DevicePtr buf,
                       size_t count, DataType type, int root);
Status StagedAlltoall(Communicator& comm, GpuRun& run, StagingBuffers& staging, DevicePtr send,
                      const std::vector<size_t>& send_counts, DevicePtr recv,
                      const std::vector<size_t>& recv_counts, DataType type);

}  // namespace cohort::gpu

#endif  // COHORT_GPU_TRANSPORT_STAGED_COLLECTIVES_H_
