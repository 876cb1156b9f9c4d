// include/cohort/cohort.h over the process's one Runtime.
#include <mutex>

#include "cohort/cohort.h"
#include "collectives/collectives.h"
#include "engine/runtime.h"

namespace cohort {
namespace {

// The one piece of global state: the running job, if any.
std::mutex g_mu;
std::unique_ptr<Runtime> g_runtime;  // guarded by g_mu for init/shutdown

Status NotRunning() {
  return Status::NotInitialized("cohort is not initialized: call cohort::Init() first");
}

template <typename F>
Status WithComm(F f) {
  Runtime* rt = g_runtime.get();
  if (rt == nullptr) return NotRunning();
  return f(rt->comm());
}

int MeshValue(int Mesh::*field) {
  Runtime* rt = g_runtime.get();
  return rt == nullptr ? -1 : rt->comm().mesh().*field;
}

}  // namespace

Status Init() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_runtime != nullptr) return Status::InvalidArgument("cohort is already initialized");
  Result<std::unique_ptr<Runtime>> rt = Runtime::Start(ProcessEnv());
  if (!rt.ok()) return rt.status();
  g_runtime = std::move(rt).value();
  return Status::OK();
}

Status Shutdown() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_runtime.reset();
  return Status::OK();
}

bool IsInitialized() { return g_runtime != nullptr; }
int Rank() { return MeshValue(&Mesh::rank); }
int Size() { return MeshValue(&Mesh::size); }
int LocalRank() { return MeshValue(&Mesh::local_rank); }
int LocalSize() { return MeshValue(&Mesh::local_size); }
int CrossRank() { return MeshValue(&Mesh::cross_rank); }
int CrossSize() { return MeshValue(&Mesh::cross_size); }

Status Allreduce(const void* send, void* recv, size_t count, DataType type,
                 const AllreduceOptions& options) {
  return WithComm([&](Communicator& comm) {
    return RunAllreduce(comm, send, recv, count, type, options.op, options.prescale_factor,
                        options.postscale_factor, g_runtime->settings().allreduce_algorithm);
  });
}

Status ReduceScatter(const void* send, void* recv, const size_t* recv_counts, DataType type,
                     ReduceOp op) {
  return WithComm([&](Communicator& comm) {
    return RunReduceScatter(comm, send, recv, recv_counts, type, op);
  });
}

Result<std::vector<size_t>> AllgatherCounts(size_t my_count) {
  std::vector<size_t> counts(std::max(Size(), 0));
  Status s = WithComm([&](Communicator& comm) {
    std::vector<size_t> ones(comm.size(), 1);
    uint64_t mine = my_count;
    std::vector<uint64_t> all(comm.size());
    COHORT_RETURN_IF_ERROR(
        RunAllgather(comm, &mine, 1, all.data(), ones.data(), DataType::kInt64));
    for (int r = 0; r < comm.size(); ++r) counts[r] = all[r];
    return Status::OK();
  });
  if (!s.ok()) return s;
  return counts;
}

Status Allgather(const void* send, size_t send_count, void* recv, const size_t* recv_counts,
                 DataType type) {
  return WithComm([&](Communicator& comm) {
    return RunAllgather(comm, send, send_count, recv, recv_counts, type);
  });
}

Status Broadcast(void* buf, size_t count, DataType type, int root) {
  return WithComm([&](Communicator& comm) { return RunBroadcast(comm, buf, count, type, root); });
}

Result<std::vector<size_t>> AlltoallCounts(const size_t* send_counts) {
  std::vector<size_t> counts(std::max(Size(), 0));
  Status s = WithComm([&](Communicator& comm) {
    if (send_counts == nullptr) {
      return comm.Fail(Status::InvalidArgument("alltoall counts: send_counts is null"));
    }
    std::vector<size_t> ones(comm.size(), 1);
    std::vector<uint64_t> out(send_counts, send_counts + comm.size()), in(comm.size());
    COHORT_RETURN_IF_ERROR(RunAlltoall(comm, out.data(), ones.data(), in.data(), ones.data(),
                                       DataType::kInt64));
    for (int r = 0; r < comm.size(); ++r) counts[r] = in[r];
    return Status::OK();
  });
  if (!s.ok()) return s;
  return counts;
}

Status Alltoall(const void* send, const size_t* send_counts, void* recv,
                const size_t* recv_counts, DataType type) {
  return WithComm([&](Communicator& comm) {
    return RunAlltoall(comm, send, send_counts, recv, recv_counts, type);
  });
}

Status Barrier() {
  return WithComm([&](Communicator& comm) { return RunBarrier(comm); });
}

}  // namespace cohort
