// NcclLibrary: NcclApi over libnccl.so.2 found at run time.
#ifndef COHORT_GPU_NCCL_LIBRARY_H_
#define COHORT_GPU_NCCL_LIBRARY_H_

#include <memory>

#include "gpu/cuda_declarations.h"
#include "gpu/nccl_api.h"
#include "gpu/shared_library.h"

namespace cohort::gpu {

class NcclLibrary : public NcclApi {
 public:
  static Result<std::unique_ptr<NcclLibrary>> Create(std::unique_ptr<SharedLibrary> library);

  std::string Describe() const override;
  int Version() const override { return version_; }
  bool SupportsNonBlocking() const override { return fn_.ncclCommInitRankConfig != nullptr; }
  Result<NcclUniqueId> GetUniqueId() override;
  Result<NcclComm> InitRank(int nranks, const NcclUniqueId& id, int rank,
                            bool non_blocking) override;
  Result<bool> InProgress(NcclComm comm) override;
  Status Abort(NcclComm comm) override;
  Status Destroy(NcclComm comm) override;
  Status AllReduce(const void* send, void* recv, size_t count, int dtype, int op, NcclComm comm,
                   StreamHandle stream) override;
  Status Broadcast(const void* send, void* recv, size_t count, int dtype, int root, NcclComm comm,
                   StreamHandle stream) override;
  Status AllGather(const void* send, void* recv, size_t send_count, int dtype, NcclComm comm,
                   StreamHandle stream) override;
  Status ReduceScatter(const void* send, void* recv, size_t recv_count, int dtype, int op,
                       NcclComm comm, StreamHandle stream) override;

 private:
  explicit NcclLibrary(std::unique_ptr<SharedLibrary> library) : library_(std::move(library)) {}
  // OK for ncclSuccess and ncclInProgress (a non-blocking call under way);
  // otherwise "<call> failed: <NCCL's text>".
  Status Check(abi::ncclResult_t result, const char* call) const;

  std::unique_ptr<SharedLibrary> library_;
  abi::NcclFunctions fn_{};
  int version_ = 0;
};

}  // namespace cohort::gpu

#endif  // COHORT_GPU_NCCL_LIBRARY_H_
