// The NCCL transport (nccl_communicator.h).
#include "gpu/transport/nccl_communicator.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "collectives/collectives.h"
#include "common/logging.h"
#include "gpu/cuda_declarations.h"
#include "gpu/transport/nccl_mapping.h"
#include "gpu/transport/outcomes.h"

namespace cohort::gpu {
namespace {

// Rank 0's id, or why it has none.
struct IdRecord {
  char id[128];
  int32_t ok;
  char error[380];
};
static_assert(sizeof(IdRecord) == 512);

IdRecord Failed(const Status& status) {
  IdRecord r;
  std::memset(&r, 0, sizeof(r));
  r.ok = status.ok() ? 1 : 0;
  std::strncpy(r.error, status.message().c_str(), sizeof(r.error) - 1);
  return r;
}

std::string ErrorText(const IdRecord& r) {
  return std::string(r.error, strnlen(r.error, sizeof(r.error)));
}

}  // namespace

Status CheckPeersAlive(Communicator& comm, const std::string& during) {
  for (int peer = 0; peer < comm.size(); ++peer) {
    if (peer == comm.rank()) continue;
    COHORT_RETURN_IF_ERROR(comm.CheckPeerAlive(peer, during));
  }
  return Status::OK();
}

Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(Communicator& comm,
                                                                   NcclApi& nccl) {
  std::unique_ptr<NcclCommunicator> c(new NcclCommunicator(comm, nccl));
  IdRecord record = Failed(Status::OK());
  if (comm.rank() == 0) {
    Result<NcclUniqueId> id = nccl.GetUniqueId();
    if (id.ok()) {
      std::memcpy(record.id, id->data(), sizeof(record.id));
    } else {
      record = Failed(id.status());
    }
  }
  COHORT_RETURN_IF_ERROR(RunBroadcast(comm, &record, sizeof(record), DataType::kUInt8, 0));
  if (!record.ok) {
    return comm.Fail(
        Status::NotInitialized("NCCL: rank 0 could not create a unique id: " + ErrorText(record)));
  }
  NcclUniqueId id;
  std::memcpy(id.data(), record.id, id.size());

  c->non_blocking_ = nccl.SupportsNonBlocking();
  Result<NcclComm> joined = nccl.InitRank(comm.size(), id, comm.rank(), c->non_blocking_);
  Status mine = joined.status();
  if (joined.ok()) {
    c->nccl_comm_ = *joined;
    mine = c->Settle("joining the NCCL communicator");
  }
  // Every rank learns whether every rank joined.
  Result<std::vector<std::string>> outcomes = GatherOutcomes(comm, mine);
  if (!outcomes.ok()) return outcomes.status();
  const int failed = FirstFailedRank(*outcomes);
  if (failed >= 0) {
    c->Abort();
    return Status::NotInitialized("NCCL: " + comm.mesh().Describe(failed) +
                                  " could not join the communicator: " + (*outcomes)[failed]);
  }
  return c;
}

NcclCommunicator::~NcclCommunicator() {
  if (nccl_comm_ == nullptr || aborted_) return;
  Status destroyed = nccl_.Destroy(nccl_comm_);
  if (!destroyed.ok()) {
    COHORT_LOG(kWarning) << "destroying the NCCL communicator: " << destroyed.message();
  }
}

void NcclCommunicator::Abort() {
  if (nccl_comm_ == nullptr || aborted_) return;
  aborted_ = true;
  Status aborted = nccl_.Abort(nccl_comm_);
  if (!aborted.ok()) {
    COHORT_LOG(kWarning) << "aborting the NCCL communicator: " << aborted.message();
  }
}

Status NcclCommunicator::Health() {
  if (nccl_comm_ == nullptr) return Status::NotInitialized("no NCCL communicator");
  if (aborted_) return Status::PeerFailure("the NCCL communicator was aborted");
  Result<bool> busy = nccl_.InProgress(nccl_comm_);
  return busy.status();
}

Status NcclCommunicator::Fail(const Status& status) {
  Abort();
  return comm_.Fail(status);
}

Status NcclCommunicator::Settle(const char* what) {
  if (!non_blocking_) return Status::OK();
  const Deadline deadline = comm_.CallDeadline();
  for (unsigned polls = 0;; ++polls) {
    Result<bool> busy = nccl_.InProgress(nccl_comm_);
    if (!busy.ok()) return busy.status().WithContext(what);
    if (!*busy) return Status::OK();
    if (deadline.Expired()) {
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%g", comm_.options().timeout_seconds);
      return Status::Timeout(std::string(what) + ": NCCL did not finish within " + seconds +
                             " s (COHORT_TIMEOUT)");
    }
    if (polls % 64 == 63) COHORT_RETURN_IF_ERROR(CheckPeersAlive(comm_, what));
    if (polls > 256) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

Status NcclCommunicator::Allreduce(GpuRun& run, DevicePtr send, DevicePtr recv, size_t count,
                                   const ReduceSpec& spec) {
  const std::optional<int> dtype = NcclDataType(spec.type);
  const std::optional<int> op = NcclReduceOp(spec.op);
  if (!dtype || !op) {
    return Fail(Status::Internal(std::string("NCCL cannot reduce ") + DataTypeName(spec.type) +
                                 " with " + ReduceOpName(spec.op)));
  }
  DevicePtr input = send;
  if (spec.prescale != 1.0) {
    ReduceSpec scale = spec;
    scale.finish = false;
    COHORT_RETURN_IF_ERROR(run.reducer.Reduce(recv, {send}, count, scale, run.stream));
    input = recv;
  }
  Status s = nccl_.AllReduce(AsPointer(input), AsPointer(recv), count, *dtype, *op, nccl_comm_,
                             run.stream);
  if (s.ok()) s = Settle("ncclAllReduce");
  if (!s.ok()) return Fail(s);
  if (spec.op == ReduceOp::kAverage || spec.postscale != 1.0) {
    ReduceSpec finish = spec;
    finish.first_prescaled = true;
    finish.finish = true;
    finish.ranks = comm_.size();
    COHORT_RETURN_IF_ERROR(run.reducer.Reduce(recv, {recv}, count, finish, run.stream));
  }
  return Status::OK();
}

Status NcclCommunicator::ReduceScatter(GpuRun& run, DevicePtr send, DevicePtr recv,
                                       size_t count_per_rank, const ReduceSpec& spec) {
  const std::optional<int> dtype = NcclDataType(spec.type);
  const std::optional<int> op = NcclReduceOp(spec.op);
  if (!dtype || !op || spec.prescale != 1.0) {
    return Fail(Status::Internal(std::string("NCCL reduce-scatter cannot take ") +
                                 DataTypeName(spec.type) + " with " + ReduceOpName(spec.op) +
                                 (spec.prescale != 1.0 ? " and a prescale" : "")));
  }
  Status s = nccl_.ReduceScatter(AsPointer(send), AsPointer(recv), count_per_rank, *dtype, *op,
                                 nccl_comm_, run.stream);
  if (s.ok()) s = Settle("ncclReduceScatter");
  if (!s.ok()) return Fail(s);
  if (spec.finish && (spec.op == ReduceOp::kAverage || spec.postscale != 1.0)) {
    ReduceSpec finish = spec;
    finish.first_prescaled = true;
    finish.ranks = comm_.size();
    COHORT_RETURN_IF_ERROR(run.reducer.Reduce(recv, {recv}, count_per_rank, finish, run.stream));
  }
  return Status::OK();
}

Status NcclCommunicator::Allgather(GpuRun& run, DevicePtr send, DevicePtr recv,
                                   size_t count_per_rank, DataType type) {
  // Any dtype moves as bytes.
  Status s = nccl_.AllGather(AsPointer(send), AsPointer(recv), count_per_rank * DataTypeSize(type),
                             abi::ncclUint8, nccl_comm_, run.stream);
  if (s.ok()) s = Settle("ncclAllGather");
  return s.ok() ? s : Fail(s);
}

Status NcclCommunicator::Broadcast(GpuRun& run, DevicePtr buf, size_t count, DataType type,
                                   int root) {
  Status s = nccl_.Broadcast(AsPointer(buf), AsPointer(buf), count * DataTypeSize(type),
                             abi::ncclUint8, root, nccl_comm_, run.stream);
  if (s.ok()) s = Settle("ncclBroadcast");
  return s.ok() ? s : Fail(s);
}

}  // namespace cohort::gpu
