// GpuCollectives: the collectives on device memory for one communicator,
// the one object the engine (or a test, or a benchmark) calls for GPU
// tensors. It owns the engine's stream, the transports' state (CUDA IPC
// buffers of this host, the NCCL communicator, staging buffers) and picks a
// transport per call (transport_choice.h).
//
// Every pointer is device memory on this rank's device. A call queues its
// device work on stream() and returns; the engine orders that stream
// against its caller's with gpu/stream_ordering.h and waits for it (or
// calls Synchronize, which also watches the peers). The host blocks inside
// a call only where a transport must (IPC's per-chunk exchange, staging's
// copy to host memory), always bounded by COHORT_TIMEOUT.
//
// Every rank of the communicator calls the same collectives in the same
// order with agreeing arguments; an error breaks the communicator like any
// CPU collective's (peers fail too, naming the cause).
#ifndef COHORT_GPU_TRANSPORT_GPU_COLLECTIVES_H_
#define COHORT_GPU_TRANSPORT_GPU_COLLECTIVES_H_

#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "gpu/gpu_stack.h"
#include "gpu/kernel_cache.h"
#include "gpu/stream.h"
#include "gpu/transport/gpu_run.h"
#include "gpu/transport/ipc_peers.h"
#include "gpu/transport/nccl_communicator.h"
#include "gpu/transport/staged_collectives.h"
#include "gpu/transport/transport_choice.h"

namespace cohort::gpu {

// What GpuCollectives is built from (a GpuStack's parts, or fakes).
struct GpuDeps {
  CudaApi* api = nullptr;              // required
  KernelCompiler* compiler = nullptr;  // required
  NcclApi* nccl = nullptr;             // null: NCCL missing, for the reason below
  std::string nccl_missing;
};

class GpuCollectives {
 public:
  // Collective over `comm`: every rank gives its device; ranks exchange
  // what they have, set up CUDA IPC among the ranks of each host (and NCCL
  // when chosen) and agree on the transport. `comm` must outlive the result.
  static Result<std::unique_ptr<GpuCollectives>> Create(Communicator& comm, const GpuDeps& deps,
                                                        int device, const GpuStackOptions& options);
  ~GpuCollectives();
  GpuCollectives(const GpuCollectives&) = delete;
  GpuCollectives& operator=(const GpuCollectives&) = delete;

  StreamHandle stream() const { return stream_.handle(); }
  int device() const { return device_.ordinal; }
  GpuTransport transport() const { return transport_; }
  const TransportFacts& facts() const { return facts_; }
  // "nccl among 8 ranks on 2 hosts (NCCL 2.28.9 ...)", for logs and reports.
  std::string Describe() const;
  KernelCache& kernels() { return *kernels_; }

  Status Allreduce(DevicePtr send, DevicePtr recv, size_t count, DataType type, ReduceOp op,
                   double prescale = 1.0, double postscale = 1.0);
  // counts[r]: elements rank r receives; send holds their sum.
  Status ReduceScatter(DevicePtr send, DevicePtr recv, const std::vector<size_t>& counts,
                       DataType type, ReduceOp op);
  // counts[r]: elements rank r sends.
  Status Allgather(DevicePtr send, DevicePtr recv, const std::vector<size_t>& counts,
                   DataType type);
  Status Broadcast(DevicePtr buf, size_t count, DataType type, int root);
  Status Alltoall(DevicePtr send, const std::vector<size_t>& send_counts, DevicePtr recv,
                  const std::vector<size_t>& recv_counts, DataType type);

  // Waits until everything queued on stream() is done, watching meanwhile
  // for failed peers on this host and (with NCCL) asynchronous NCCL errors.
  // A failure aborts NCCL and breaks the communicator, naming the cause.
  Status Synchronize();

  // The transport a call of this kind would take (for tests and reports).
  GpuTransport TransportForReduction(DataType type, ReduceOp op) const;

 private:
  GpuCollectives(Communicator& comm, CudaApi& api) : comm_(comm), api_(api) {}
  Status Setup(const GpuDeps& deps, int device, const GpuStackOptions& options);
  // Makes this rank's device current on the calling thread (the engine's).
  Status Enter();
  GpuRun Run() { return GpuRun{api_, stream_.handle(), *reducer_, sync_event_.handle()}; }
  bool OneHostIpc() const { return facts_.hosts == 1 && (ipc_ != nullptr || facts_.ranks == 1); }
  Status Local(DevicePtr send, DevicePtr recv, size_t count, const ReduceSpec& spec);

  Communicator& comm_;
  CudaApi& api_;
  DeviceInfo device_;
  Stream stream_;
  Event sync_event_;
  std::unique_ptr<KernelCache> kernels_;
  std::unique_ptr<DeviceReducer> reducer_;
  TransportFacts facts_;
  GpuTransport transport_ = GpuTransport::kStaged;
  std::unique_ptr<Communicator> local_comm_;  // the ranks of this host, when not all ranks
  std::unique_ptr<Communicator> cross_comm_;  // this local rank on every host (hierarchical)
  std::unique_ptr<IpcPeers> ipc_;             // CUDA IPC among this host's ranks
  std::unique_ptr<NcclCommunicator> nccl_;
  std::string nccl_description_;
  StagingBuffers staging_;
};

}  // namespace cohort::gpu

#endif  // COHORT_GPU_TRANSPORT_GPU_COLLECTIVES_H_
