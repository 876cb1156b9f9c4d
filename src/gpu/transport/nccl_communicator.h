// NcclCommunicator: the NCCL transport. Rank 0 creates NCCL's unique id and
// broadcasts it over cohort's own communicator (the CPU mesh), every rank
// joins, and the collectives run on the engine's stream. cohort's own
// kernels apply the prescale before and the average's division and the
// postscale after an NCCL sum, so results follow the CPU path's rules.
//
// Failure semantics as the CPU path: initialisation is non-blocking (NCCL
// 2.14+) and polled against COHORT_TIMEOUT while the ranks of this host are
// checked for having died (a dead one is named); a rank that fails to join
// makes every rank fail with its reason; an error or a timeout aborts the
// NCCL communicator (its kernels stop, its memory is freed). NCCL older than
// 2.14 initialises blocking, without that bound.
#ifndef COHORT_GPU_TRANSPORT_NCCL_COMMUNICATOR_H_
#define COHORT_GPU_TRANSPORT_NCCL_COMMUNICATOR_H_

#include <memory>
#include <vector>

#include "collectives/communicator.h"
#include "gpu/device_reduce.h"
#include "gpu/nccl_api.h"
#include "gpu/transport/gpu_run.h"

namespace cohort::gpu {

// Checks every peer of `comm` on this host for having exited or given up.
Status CheckPeersAlive(Communicator& comm, const std::string& during);

class NcclCommunicator {
 public:
  // Collective over `comm`, with the calling thread's current device.
  static Result<std::unique_ptr<NcclCommunicator>> Create(Communicator& comm, NcclApi& nccl);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  // Queued on run.stream. Reduce-scatter and allgather need equal counts
  // on every rank (NCCL's interface); callers check EqualCounts first.
  Status Allreduce(GpuRun& run, DevicePtr send, DevicePtr recv, size_t count,
                   const ReduceSpec& spec);
  Status ReduceScatter(GpuRun& run, DevicePtr send, DevicePtr recv, size_t count_per_rank,
                       const ReduceSpec& spec);
  Status Allgather(GpuRun& run, DevicePtr send, DevicePtr recv, size_t count_per_rank,
                   DataType type);
  Status Broadcast(GpuRun& run, DevicePtr buf, size_t count, DataType type, int root);

  // Whether NCCL reports the communicator broken (an asynchronous error).
  Status Health();
  // Aborts the NCCL communicator (after a failure: never waits for peers).
  void Abort();

 private:
  NcclCommunicator(Communicator& comm, NcclApi& nccl) : comm_(comm), nccl_(nccl) {}
  // After a non-blocking call: polls until it is enqueued, against the deadline.
  Status Settle(const char* what);
  // An error inside a collective: abort NCCL and break cohort's communicator.
  Status Fail(const Status& status);

  Communicator& comm_;
  NcclApi& nccl_;
  NcclComm nccl_comm_ = nullptr;
  bool non_blocking_ = false;
  bool aborted_ = false;
};

}  // namespace cohort::gpu

#endif  // COHORT_GPU_TRANSPORT_NCCL_COMMUNICATOR_H_
