// include/cohort/cohort.h over the process's one Runtime.
#include <cstring>
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

Engine* RunningEngine() {
  Runtime* rt = g_runtime.get();
  return rt == nullptr ? nullptr : rt->engine();
}

Status EngineNotYet(const char* what) {
  return Status::InvalidArgument(std::string(what) +
                                 " is not available once the asynchronous engine runs (yet)");
}

Deadline WaitDeadline(double timeout_seconds) {
  if (timeout_seconds < 0) timeout_seconds = g_runtime->settings().timeout_seconds;
  return Deadline::AfterSeconds(timeout_seconds);
}

Result<Handle> Submit(Request request, DoneCallback done) {
  Runtime* rt = g_runtime.get();
  if (rt == nullptr) return NotRunning();
  return rt->StartEngine().Enqueue(std::move(request), std::move(done));
}

// Runs a blocking call through the running engine: submit, wait, release.
Status SubmitAndWait(Request request) {
  Result<Handle> h = Submit(std::move(request), nullptr);
  if (!h.ok()) return h.status();
  Status s = Wait(*h);
  Release(*h);
  return s;
}

Announcement Describe(const std::string& name, RequestKind kind, const Shape& shape,
                      DataType type) {
  Announcement a;
  a.name = name;
  a.kind = kind;
  a.shape = shape;
  a.dtype = type;
  return a;
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
  if (RunningEngine() != nullptr) {
    Request r;
    r.what = Describe(g_runtime->NextSyncName("allreduce"), RequestKind::kAllreduce,
                      {static_cast<int64_t>(count)}, type);
    r.what.op = options.op;
    r.what.prescale = options.prescale_factor;
    r.what.postscale = options.postscale_factor;
    r.what.compression = static_cast<int32_t>(options.compression);
    r.send = send;
    r.recv = recv;
    return SubmitAndWait(std::move(r));
  }
  return WithComm([&](Communicator& comm) {
    return RunAllreduce(comm, send, recv, count, type, options.op, options.prescale_factor,
                        options.postscale_factor, g_runtime->settings().allreduce_algorithm,
                        options.compression);
  });
}

Status ReduceScatter(const void* send, void* recv, const size_t* recv_counts, DataType type,
                     ReduceOp op) {
  if (RunningEngine() != nullptr) return EngineNotYet("ReduceScatter");
  return WithComm([&](Communicator& comm) {
    return RunReduceScatter(comm, send, recv, recv_counts, type, op);
  });
}

Result<std::vector<size_t>> AllgatherCounts(size_t my_count) {
  std::vector<size_t> counts(std::max(Size(), 0));
  if (RunningEngine() != nullptr) {
    uint64_t mine = my_count;
    Result<Handle> h = AllgatherAsync(g_runtime->NextSyncName("allgather_counts"), &mine, {1},
                                      DataType::kInt64);
    if (!h.ok()) return h.status();
    std::vector<unsigned char> data;
    Shape shape;
    Status s = Wait(*h);
    if (s.ok()) s = TakeAllgatherResult(*h, &data, &shape);
    Release(*h);
    if (!s.ok()) return s;
    std::memcpy(counts.data(), data.data(), counts.size() * sizeof(uint64_t));
    return counts;
  }
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
  if (RunningEngine() != nullptr) {
    Result<Handle> h = AllgatherAsync(g_runtime->NextSyncName("allgather"), send,
                                      {static_cast<int64_t>(send_count)}, type);
    if (!h.ok()) return h.status();
    std::vector<unsigned char> data;
    Shape shape;
    Status s = Wait(*h);
    if (s.ok()) s = TakeAllgatherResult(*h, &data, &shape);
    Release(*h);
    if (!s.ok()) return s;
    size_t expected = 0;
    for (int r = 0; r < Size(); ++r) expected += recv_counts[r];
    if (data.size() != expected * DataTypeSize(type)) {
      return Status::Mismatch("allgather: the ranks contributed " +
                              std::to_string(data.size() / DataTypeSize(type)) +
                              " elements in all, but recv_counts add up to " +
                              std::to_string(expected));
    }
    if (!data.empty()) std::memcpy(recv, data.data(), data.size());
    return Status::OK();
  }
  return WithComm([&](Communicator& comm) {
    return RunAllgather(comm, send, send_count, recv, recv_counts, type);
  });
}

Status Broadcast(void* buf, size_t count, DataType type, int root) {
  if (RunningEngine() != nullptr) {
    Request r;
    r.what = Describe(g_runtime->NextSyncName("broadcast"), RequestKind::kBroadcast,
                      {static_cast<int64_t>(count)}, type);
    r.what.root = root;
    r.recv = buf;
    return SubmitAndWait(std::move(r));
  }
  return WithComm([&](Communicator& comm) { return RunBroadcast(comm, buf, count, type, root); });
}

Result<std::vector<size_t>> AlltoallCounts(const size_t* send_counts) {
  if (RunningEngine() != nullptr) return EngineNotYet("AlltoallCounts");
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
  if (RunningEngine() != nullptr) return EngineNotYet("Alltoall");
  return WithComm([&](Communicator& comm) {
    return RunAlltoall(comm, send, send_counts, recv, recv_counts, type);
  });
}

Status Barrier() {
  if (RunningEngine() != nullptr) {
    Request r;
    r.what = Describe(g_runtime->NextSyncName("barrier"), RequestKind::kBarrier, {}, DataType::kUInt8);
    return SubmitAndWait(std::move(r));
  }
  return WithComm([&](Communicator& comm) { return RunBarrier(comm); });
}

Result<Handle> AllreduceAsync(const std::string& name, const void* send, void* recv,
                              const Shape& shape, DataType type, const AllreduceOptions& options,
                              DoneCallback done) {
  Request r;
  r.what = Describe(name, RequestKind::kAllreduce, shape, type);
  r.what.op = options.op;
  r.what.prescale = options.prescale_factor;
  r.what.postscale = options.postscale_factor;
  r.what.compression = static_cast<int32_t>(options.compression);
  r.send = send;
  r.recv = recv;
  return Submit(std::move(r), std::move(done));
}

Result<std::vector<Handle>> GroupedAllreduceAsync(const std::vector<std::string>& names,
                                                  const std::vector<const void*>& sends,
                                                  const std::vector<void*>& recvs,
                                                  const std::vector<Shape>& shapes, DataType type,
                                                  const AllreduceOptions& options) {
  if (g_runtime == nullptr) return NotRunning();
  if (sends.size() != names.size() || recvs.size() != names.size() ||
      shapes.size() != names.size()) {
    return Status::InvalidArgument("grouped allreduce: names, sends, recvs and shapes differ in length");
  }
  const uint64_t group = g_runtime->NextGroupId();
  std::vector<Handle> handles;
  for (size_t i = 0; i < names.size(); ++i) {
    Request r;
    r.what = Describe(names[i], RequestKind::kAllreduce, shapes[i], type);
    r.what.op = options.op;
    r.what.prescale = options.prescale_factor;
    r.what.postscale = options.postscale_factor;
    r.what.compression = static_cast<int32_t>(options.compression);
    r.what.group_id = group;
    r.what.group_size = static_cast<uint32_t>(names.size());
    r.send = sends[i];
    r.recv = recvs[i];
    Result<Handle> h = Submit(std::move(r), nullptr);
    if (!h.ok()) return h.status();
    handles.push_back(*h);
  }
  return handles;
}

Result<Handle> BroadcastAsync(const std::string& name, void* buf, const Shape& shape,
                              DataType type, int root, DoneCallback done) {
  Request r;
  r.what = Describe(name, RequestKind::kBroadcast, shape, type);
  r.what.root = root;
  r.recv = buf;
  return Submit(std::move(r), std::move(done));
}

Result<Handle> AllgatherAsync(const std::string& name, const void* send, const Shape& shape,
                              DataType type, DoneCallback done) {
  Request r;
  r.what = Describe(name, RequestKind::kAllgather, shape, type);
  r.send = send;
  return Submit(std::move(r), std::move(done));
}

Result<Handle> BarrierAsync(const std::string& name, DoneCallback done) {
  Request r;
  r.what = Describe(name, RequestKind::kBarrier, {}, DataType::kUInt8);
  return Submit(std::move(r), std::move(done));
}

Result<bool> Poll(Handle handle) {
  Engine* e = RunningEngine();
  if (e == nullptr) return NotRunning();
  return e->handles().Poll(handle);
}

Status Wait(Handle handle, double timeout_seconds) {
  Engine* e = RunningEngine();
  if (e == nullptr) return NotRunning();
  return e->handles().Wait(handle, WaitDeadline(timeout_seconds));
}

Status TakeAllgatherResult(Handle handle, std::vector<unsigned char>* data, Shape* shape) {
  Engine* e = RunningEngine();
  if (e == nullptr) return NotRunning();
  return e->handles().TakeOutput(handle, data, shape);
}

Status StartTimeline(const std::string& path) {
  if (g_runtime == nullptr) return NotRunning();
  return g_runtime->StartEngine().StartTimeline(path);
}

Status StopTimeline() {
  Engine* e = RunningEngine();
  return e == nullptr ? Status::OK() : e->StopTimeline();
}

void Release(Handle handle) {
  Engine* e = RunningEngine();
  if (e != nullptr) e->handles().Release(handle);
}

}  // namespace cohort
