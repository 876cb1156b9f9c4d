// NcclApi: the NCCL calls cohort makes, behind an interface so the NCCL
// transport's protocol (unique-id exchange, non-blocking initialisation
// polled against the deadline, abort on failure) is tested with a fake.
// NcclLibrary (nccl_library.h) is the real one, over libnccl.so.2.
//
// With a non-blocking communicator (NCCL 2.14+) every call may return before
// its work is enqueued; InProgress says when it has been. Collectives take
// NCCL's own dtype and op values (gpu/nccl_mapping.h maps cohort's).
#ifndef COHORT_GPU_NCCL_API_H_
#define COHORT_GPU_NCCL_API_H_

#include <array>
#include <string>

#include "cohort/status.h"
#include "gpu/cuda_api.h"

namespace cohort::gpu {

using NcclComm = void*;
using NcclUniqueId = std::array<char, 128>;

class NcclApi {
 public:
  virtual ~NcclApi() = default;
  // "NCCL 2.27.3 (/.../nvidia/nccl/lib/libnccl.so.2)".
  virtual std::string Describe() const = 0;
  // NCCL's version code, major * 10000 + minor * 100 + patch (22703 for
  // 2.27.3), as ncclGetVersion gives it and Horovod's nccl_built() returns.
  virtual int Version() const = 0;
  // Whether InitRank can be non-blocking (NCCL 2.14+).
  virtual bool SupportsNonBlocking() const = 0;
  virtual Result<NcclUniqueId> GetUniqueId() = 0;
  // Joins the communicator of `nranks` with this id as `rank`. Non-blocking:
  // returns at once; poll InProgress until false before using it.
  virtual Result<NcclComm> InitRank(int nranks, const NcclUniqueId& id, int rank,
                                    bool non_blocking) = 0;
  // ncclCommGetAsyncError: true while an operation is still being
  // enqueued or initialised; an error once the communicator failed.
  virtual Result<bool> InProgress(NcclComm comm) = 0;
  // Abort: for a communicator that failed or whose peers are gone (never
  // waits for them). Destroy: after every operation completed.
  virtual Status Abort(NcclComm comm) = 0;
  virtual Status Destroy(NcclComm comm) = 0;

  virtual Status AllReduce(const void* send, void* recv, size_t count, int dtype, int op,
                           NcclComm comm, StreamHandle stream) = 0;
  virtual Status Broadcast(const void* send, void* recv, size_t count, int dtype, int root,
                           NcclComm comm, StreamHandle stream) = 0;
  virtual Status AllGather(const void* send, void* recv, size_t send_count, int dtype,
                           NcclComm comm, StreamHandle stream) = 0;
  virtual Status ReduceScatter(const void* send, void* recv, size_t recv_count, int dtype, int op,
                               NcclComm comm, StreamHandle stream) = 0;
};

}  // namespace cohort::gpu

#endif  // COHORT_GPU_NCCL_API_H_
