// The fake NCCL for tests (fake_nccl.h).
#include "support/fake_nccl.h"

#include <unistd.h>

#include <cstring>
#include <optional>

#include "collectives/collectives.h"
#include "gpu/cuda_declarations.h"

namespace cohort::gpu::testing {
namespace {

std::optional<DataType> CohortType(int nccl) {
  switch (nccl) {
    case abi::ncclInt8:
      return DataType::kInt8;
    case abi::ncclUint8:
      return DataType::kUInt8;
    case abi::ncclInt32:
      return DataType::kInt32;
    case abi::ncclInt64:
      return DataType::kInt64;
    case abi::ncclFloat16:
      return DataType::kFloat16;
    case abi::ncclBfloat16:
      return DataType::kBFloat16;
    case abi::ncclFloat32:
      return DataType::kFloat32;
    case abi::ncclFloat64:
      return DataType::kFloat64;
  }
  return std::nullopt;
}

std::optional<ReduceOp> CohortOp(int nccl) {
  switch (nccl) {
    case abi::ncclSum:
      return ReduceOp::kSum;
    case abi::ncclProd:
      return ReduceOp::kProduct;
    case abi::ncclMax:
      return ReduceOp::kMax;
    case abi::ncclMin:
      return ReduceOp::kMin;
  }
  return std::nullopt;
}

void* const kComm = reinterpret_cast<void*>(0x11cc1);

}  // namespace

Result<NcclUniqueId> FakeNccl::GetUniqueId() {
  NcclUniqueId id{};
  const std::string text = "fake-nccl-id:" + std::to_string(getpid());
  std::memcpy(id.data(), text.data(), text.size());
  return id;
}

Result<NcclComm> FakeNccl::InitRank(int nranks, const NcclUniqueId& id, int rank, bool) {
  if (nranks != comm_.size() || rank != comm_.rank()) {
    return Status::InvalidArgument("fake NCCL: joined as rank " + std::to_string(rank) + " of " +
                                   std::to_string(nranks) + " in a job of " +
                                   std::to_string(comm_.size()));
  }
  if (std::strncmp(id.data(), "fake-nccl-id:", 13) != 0) {
    return Status::InvalidArgument("fake NCCL: not a unique id from GetUniqueId");
  }
  id_ = id;
  joined_ = true;
  return kComm;
}

Status FakeNccl::Check(NcclComm comm) const {
  if (comm != kComm || !joined_) return Status::InvalidArgument("fake NCCL: unknown communicator");
  if (aborts_ > 0) return Status::InvalidArgument("fake NCCL: communicator was aborted");
  return Status::OK();
}

Result<bool> FakeNccl::InProgress(NcclComm comm) {
  COHORT_RETURN_IF_ERROR(Check(comm));
  return hang_init_;
}

Status FakeNccl::Abort(NcclComm) {
  ++aborts_;
  return Status::OK();
}

Status FakeNccl::Destroy(NcclComm comm) {
  COHORT_RETURN_IF_ERROR(Check(comm));
  ++destroys_;
  joined_ = false;
  return Status::OK();
}

Result<DataType> FakeNccl::Begin(NcclComm comm, int dtype, StreamHandle stream) {
  COHORT_RETURN_IF_ERROR(Check(comm));
  const std::optional<DataType> type = CohortType(dtype);
  if (!type) return Status::InvalidArgument("fake NCCL: a dtype outside NCCL's");
  // NCCL's kernel runs after what the stream holds; the fake runs that now.
  COHORT_RETURN_IF_ERROR(cuda_.Flush(stream));
  ++collectives_;
  return *type;
}

Status FakeNccl::AllReduce(const void* send, void* recv, size_t count, int dtype, int op,
                           NcclComm comm, StreamHandle stream) {
  const std::optional<ReduceOp> reduce = CohortOp(op);
  if (!reduce) return Status::InvalidArgument("fake NCCL: an op outside NCCL's");
  Result<DataType> type = Begin(comm, dtype, stream);
  if (!type.ok()) return type.status();
  return RunAllreduce(comm_, send, recv, count, *type, *reduce, 1.0, 1.0);
}

Status FakeNccl::Broadcast(const void* send, void* recv, size_t count, int dtype, int root,
                           NcclComm comm, StreamHandle stream) {
  Result<DataType> type = Begin(comm, dtype, stream);
  if (!type.ok()) return type.status();
  if (send != recv && comm_.rank() == root) std::memmove(recv, send, count * DataTypeSize(*type));
  return RunBroadcast(comm_, recv, count, *type, root);
}

Status FakeNccl::AllGather(const void* send, void* recv, size_t send_count, int dtype,
                           NcclComm comm, StreamHandle stream) {
  Result<DataType> type = Begin(comm, dtype, stream);
  if (!type.ok()) return type.status();
  std::vector<size_t> counts(comm_.size(), send_count);
  return RunAllgather(comm_, send, send_count, recv, counts.data(), *type);
}

Status FakeNccl::ReduceScatter(const void* send, void* recv, size_t recv_count, int dtype, int op,
                               NcclComm comm, StreamHandle stream) {
  const std::optional<ReduceOp> reduce = CohortOp(op);
  if (!reduce) return Status::InvalidArgument("fake NCCL: an op outside NCCL's");
  Result<DataType> type = Begin(comm, dtype, stream);
  if (!type.ok()) return type.status();
  std::vector<size_t> counts(comm_.size(), recv_count);
  return RunReduceScatter(comm_, send, recv, counts.data(), *type, *reduce);
}

}  // namespace cohort::gpu::testing
