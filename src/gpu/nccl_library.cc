// NcclApi over libnccl.so.2 (nccl_library.h).
#include "gpu/nccl_library.h"

#include <cstring>

namespace cohort::gpu {

using namespace abi;  // NOLINT: NCCL's own names read best unqualified here

Result<std::unique_ptr<NcclLibrary>> NcclLibrary::Create(std::unique_ptr<SharedLibrary> library) {
  std::unique_ptr<NcclLibrary> n(new NcclLibrary(std::move(library)));
  NcclFunctions& f = n->fn_;
  COHORT_RETURN_IF_ERROR(n->library_->Bind({
      {"ncclGetVersion", Slot(&f.ncclGetVersion)},
      {"ncclGetErrorString", Slot(&f.ncclGetErrorString)},
      {"ncclGetUniqueId", Slot(&f.ncclGetUniqueId)},
      {"ncclCommInitRank", Slot(&f.ncclCommInitRank)},
      {"ncclCommInitRankConfig", Slot(&f.ncclCommInitRankConfig), false},
      {"ncclCommDestroy", Slot(&f.ncclCommDestroy)},
      {"ncclCommAbort", Slot(&f.ncclCommAbort)},
      {"ncclCommGetAsyncError", Slot(&f.ncclCommGetAsyncError)},
      {"ncclAllReduce", Slot(&f.ncclAllReduce)},
      {"ncclBroadcast", Slot(&f.ncclBroadcast)},
      {"ncclAllGather", Slot(&f.ncclAllGather)},
      {"ncclReduceScatter", Slot(&f.ncclReduceScatter)},
  }));
  COHORT_RETURN_IF_ERROR(n->Check(f.ncclGetVersion(&n->version_), "ncclGetVersion"));
  // bfloat16 (ncclBfloat16) needs 2.10; older libraries would misread it.
  if (n->version_ < 21000) {
    return Status::NotInitialized("NCCL at " + n->library_->path() + " is version " +
                                  std::to_string(n->version_) + "; cohort needs 2.10 or newer");
  }
  return n;
}

std::string NcclLibrary::Describe() const {
  // NCCL_VERSION(X, Y, Z) = X * 10000 + Y * 100 + Z since 2.9.
  return "NCCL " + std::to_string(version_ / 10000) + "." + std::to_string(version_ / 100 % 100) +
         "." + std::to_string(version_ % 100) + " (" + library_->path() + ")";
}

Status NcclLibrary::Check(ncclResult_t result, const char* call) const {
  if (result == ncclSuccess || result == ncclInProgress) return Status::OK();
  return Status::Internal(std::string(call) + " failed: " + fn_.ncclGetErrorString(result) +
                          " (NCCL error " + std::to_string(result) + ")");
}

Result<NcclUniqueId> NcclLibrary::GetUniqueId() {
  ncclUniqueId raw;
  COHORT_RETURN_IF_ERROR(Check(fn_.ncclGetUniqueId(&raw), "ncclGetUniqueId"));
  NcclUniqueId id;
  std::memcpy(id.data(), raw.internal, id.size());
  return id;
}

Result<NcclComm> NcclLibrary::InitRank(int nranks, const NcclUniqueId& id, int rank,
                                       bool non_blocking) {
  ncclUniqueId raw;
  std::memcpy(raw.internal, id.data(), id.size());
  ncclComm_t comm = nullptr;
  if (non_blocking && fn_.ncclCommInitRankConfig != nullptr) {
    ncclConfig_v21700 config{sizeof(ncclConfig_v21700),
                             0xcafebeef,
                             21700,
                             /*blocking=*/0,
                             kNcclConfigUndefInt,
                             kNcclConfigUndefInt,
                             kNcclConfigUndefInt,
                             nullptr,
                             kNcclConfigUndefInt};
    COHORT_RETURN_IF_ERROR(Check(fn_.ncclCommInitRankConfig(&comm, nranks, raw, rank, &config),
                                 "ncclCommInitRankConfig"));
  } else {
    COHORT_RETURN_IF_ERROR(
        Check(fn_.ncclCommInitRank(&comm, nranks, raw, rank), "ncclCommInitRank"));
  }
  return NcclComm{comm};
}

Result<bool> NcclLibrary::InProgress(NcclComm comm) {
  ncclResult_t state = ncclSuccess;
  COHORT_RETURN_IF_ERROR(Check(fn_.ncclCommGetAsyncError(static_cast<ncclComm_t>(comm), &state),
                               "ncclCommGetAsyncError"));
  if (state == ncclInProgress) return true;
  COHORT_RETURN_IF_ERROR(Check(state, "NCCL communicator"));
  return false;
}

Status NcclLibrary::Abort(NcclComm comm) {
  return Check(fn_.ncclCommAbort(static_cast<ncclComm_t>(comm)), "ncclCommAbort");
}

Status NcclLibrary::Destroy(NcclComm comm) {
  return Check(fn_.ncclCommDestroy(static_cast<ncclComm_t>(comm)), "ncclCommDestroy");
}

Status NcclLibrary::AllReduce(const void* send, void* recv, size_t count, int dtype, int op,
                              NcclComm comm, StreamHandle stream) {
  return Check(fn_.ncclAllReduce(send, recv, count, dtype, op, static_cast<ncclComm_t>(comm),
                                 static_cast<CUstream>(stream)),
               "ncclAllReduce");
}

Status NcclLibrary::Broadcast(const void* send, void* recv, size_t count, int dtype, int root,
                              NcclComm comm, StreamHandle stream) {
  return Check(fn_.ncclBroadcast(send, recv, count, dtype, root, static_cast<ncclComm_t>(comm),
                                 static_cast<CUstream>(stream)),
               "ncclBroadcast");
}

Status NcclLibrary::AllGather(const void* send, void* recv, size_t send_count, int dtype,
                              NcclComm comm, StreamHandle stream) {
  return Check(fn_.ncclAllGather(send, recv, send_count, dtype, static_cast<ncclComm_t>(comm),
                                 static_cast<CUstream>(stream)),
               "ncclAllGather");
}

Status NcclLibrary::ReduceScatter(const void* send, void* recv, size_t recv_count, int dtype,
                                  int op, NcclComm comm, StreamHandle stream) {
  return Check(fn_.ncclReduceScatter(send, recv, recv_count, dtype, op,
                                     static_cast<ncclComm_t>(comm), static_cast<CUstream>(stream)),
               "ncclReduceScatter");
}

}  // namespace cohort::gpu
