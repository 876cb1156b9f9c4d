// include/cohort/cohort.h over the process's one Runtime.
#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>

#include "cohort/cohort.h"
#include "collectives/collectives.h"
#include "engine/gpu_provider.h"
#include "engine/process_set.h"
#include "engine/request_checks.h"
#include "engine/runtime.h"
#include "net/shared_region.h"
#include "net/socket.h"

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

// Like SubmitAndWait, for operations that produce a new tensor.
Result<TensorResult> SubmitWaitAndTake(Request request) {
  Result<Handle> h = Submit(std::move(request), nullptr);
  if (!h.ok()) return h.status();
  TensorResult result;
  Status s = Wait(*h);
  if (s.ok()) s = TakeResult(*h, &result);
  Release(*h);
  if (!s.ok()) return s;
  return result;
}

// Copies an engine result into a caller's buffer after checking its size.
Status CopyResult(const TensorResult& result, void* recv, size_t expected_elements, DataType type,
                  const char* what) {
  if (result.data.size() != expected_elements * DataTypeSize(type)) {
    return Status::Mismatch(std::string(what) + ": the ranks' counts give " +
                            std::to_string(result.data.size() / DataTypeSize(type)) +
                            " elements here, but the receive counts add up to " +
                            std::to_string(expected_elements));
  }
  if (!result.data.empty()) std::memcpy(recv, result.data.data(), result.data.size());
  return Status::OK();
}

std::vector<int64_t> ToRows(const size_t* counts, int n) {
  return std::vector<int64_t>(counts, counts + n);
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

Request AllreduceRequest(const std::string& name, const void* send, void* recv, const Shape& shape,
                         DataType type, const AllreduceOptions& options) {
  Request r;
  r.what = Describe(name, RequestKind::kAllreduce, shape, type);
  r.what.op = options.op;
  r.what.prescale = options.prescale_factor;
  r.what.postscale = options.postscale_factor;
  r.what.compression = static_cast<int32_t>(options.compression);
  r.process_set = options.process_set;
  r.send = send;
  r.recv = recv;
  return r;
}

Request& OnDevice(Request& r, const Device& device) {
  r.device = device.index;
  r.stream = device.stream;
  return r;
}

Request BroadcastRequest(const std::string& name, void* buf, const Shape& shape, DataType type,
                         int root) {
  Request r;
  r.what = Describe(name, RequestKind::kBroadcast, shape, type);
  r.what.root = root;
  r.recv = buf;
  return r;
}

Request AllgatherRequest(const std::string& name, const void* send, const Shape& shape,
                         DataType type) {
  Request r;
  r.what = Describe(name, RequestKind::kAllgather, shape, type);
  r.send = send;
  return r;
}

Request ReduceScatterRequest(const std::string& name, const void* send, const Shape& shape,
                             DataType type, ReduceOp op, const std::vector<int64_t>& recv_rows,
                             int process_set, double prescale_factor, double postscale_factor) {
  Request r;
  r.process_set = process_set;
  r.what = Describe(name, RequestKind::kReduceScatter, shape, type);
  r.what.op = op;
  r.what.prescale = prescale_factor;
  r.what.postscale = postscale_factor;
  r.what.splits = recv_rows;
  r.send = send;
  return r;
}

// Points `r`'s output at the caller's buffer (AllgatherIntoAsync, ReduceScatterIntoAsync).
Status OutputInto(Request* r, void* recv, size_t recv_elements) {
  if (recv_elements > static_cast<size_t>(std::numeric_limits<int64_t>::max())) {
    return Status::InvalidArgument(DescribeRequest(*r) + ": output buffer of " +
                                   std::to_string(recv_elements) + " elements is too large");
  }
  r->recv = recv;
  r->recv_elements = static_cast<int64_t>(recv_elements);
  return Status::OK();
}

Request JoinRequest() {
  Request r;
  r.what = Describe(kJoinName, RequestKind::kJoin, {}, DataType::kUInt8);
  return r;
}

// Waits until `handle` completed on the host, until `deadline` (`timeout_seconds`
// from now; `by_default`: COHORT_TIMEOUT's); a timeout names what is missing.
Status WaitOnHost(Engine& e, Handle handle, double timeout_seconds,
                  const std::function<bool()>& interrupted, Deadline deadline, bool by_default) {
  Status s = e.handles().Wait(handle, deadline, interrupted);
  if (s.code() != Status::Code::kTimeout) return s;
  // The handle may have completed (with its own, better error) meanwhile.
  Result<bool> done = e.handles().Poll(handle);
  if (done.ok() && *done) return e.handles().Wait(handle, Deadline::AfterSeconds(0));
  return e.ExplainTimeout(handle, timeout_seconds, by_default ? "COHORT_TIMEOUT" : "");
}

int MeshValue(int Mesh::*field) {
  Runtime* rt = g_runtime.get();
  return rt == nullptr ? -1 : rt->comm().mesh().*field;
}

}  // namespace

Status Init() {
  std::lock_guard<std::mutex> lock(g_mu);
  // A runtime whose engine stopped (a peer shut down, a failure, a
  // deadlock) is over: its rank starts again as after Shutdown.
  if (g_runtime != nullptr && g_runtime->EngineStopped()) g_runtime.reset();
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

Status Abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_runtime == nullptr) return Status::OK();
  const Mesh& mesh = g_runtime->comm().mesh();
  g_runtime->Abort(Status::PeerFailure(mesh.Describe(mesh.rank) + " aborted: " + reason));
  g_runtime.reset();
  return Status::OK();
}

bool IsInitialized() { return g_runtime != nullptr; }

bool IsRunning() {
  Runtime* rt = g_runtime.get();
  return rt != nullptr && !rt->EngineStopped();
}

Status ElasticRounds(int64_t* joined, int64_t* newest) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_runtime == nullptr) return Status::NotInitialized("cohort has not been initialized");
  Result<int64_t> latest = g_runtime->NewestElasticRound();
  if (!latest.ok()) return latest.status();
  *joined = g_runtime->elastic_round();
  *newest = *latest;
  return Status::OK();
}
int Rank() { return MeshValue(&Mesh::rank); }
int Size() { return MeshValue(&Mesh::size); }
int LocalRank() { return MeshValue(&Mesh::local_rank); }
int LocalSize() { return MeshValue(&Mesh::local_size); }
int CrossRank() { return MeshValue(&Mesh::cross_rank); }
int CrossSize() { return MeshValue(&Mesh::cross_size); }
int SharedMemorySingleCopy() {
  Runtime* rt = g_runtime.get();
  return rt == nullptr ? -1 : rt->comm().mesh().single_copy ? 1 : 0;
}

Status AllocateSharedMemory(size_t bytes, void** out) {
  if (out == nullptr) return Status::InvalidArgument("AllocateSharedMemory: out is null");
  *out = nullptr;
  std::lock_guard<std::mutex> lock(g_mu);  // the runtime stays while it registers
  Runtime* rt = g_runtime.get();
  if (rt == nullptr) return NotRunning();
  Result<SharedAllocation> a = AllocateShared(bytes);
  if (!a.ok()) return a.status();
  rt->comm().shared_buffers().Add(*a);
  *out = a->user;
  return Status::OK();
}

Status FreeSharedMemory(void* buffer) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (Runtime* rt = g_runtime.get()) rt->comm().shared_buffers().Remove(buffer);
  return FreeShared(buffer);
}

Status Allreduce(const void* send, void* recv, size_t count, DataType type,
                 const AllreduceOptions& options) {
  if (RunningEngine() != nullptr) {
    return SubmitAndWait(AllreduceRequest(g_runtime->NextSyncName("allreduce"), send, recv,
                                          {static_cast<int64_t>(count)}, type, options));
  }
  return WithComm([&](Communicator& comm) {
    return RunAllreduce(comm, send, recv, count, type, options.op, options.prescale_factor,
                        options.postscale_factor, g_runtime->settings().allreduce_algorithm,
                        options.compression);
  });
}

Status ReduceScatter(const void* send, void* recv, const size_t* recv_counts, DataType type,
                     ReduceOp op) {
  if (RunningEngine() != nullptr) {
    if (recv_counts == nullptr)
      return Status::InvalidArgument("reducescatter: recv_counts is null");
    Request r;
    const std::vector<int64_t> rows = ToRows(recv_counts, Size());
    int64_t total = 0;
    for (int64_t x : rows) total += x;
    r.what = Describe(g_runtime->NextSyncName("reducescatter"), RequestKind::kReduceScatter,
                      {total}, type);
    r.what.op = op;
    r.what.splits = rows;
    r.send = send;
    Result<TensorResult> result = SubmitWaitAndTake(std::move(r));
    if (!result.ok()) return result.status();
    return CopyResult(*result, recv, recv_counts[Rank()], type, "reducescatter");
  }
  return WithComm([&](Communicator& comm) {
    return RunReduceScatter(comm, send, recv, recv_counts, type, op);
  });
}

Result<std::vector<size_t>> AllgatherCounts(size_t my_count) {
  std::vector<size_t> counts(std::max(Size(), 0));
  if (RunningEngine() != nullptr) {
    uint64_t mine = my_count;
    Result<TensorResult> result = SubmitWaitAndTake(AllgatherRequest(
        g_runtime->NextSyncName("allgather_counts"), &mine, {1}, DataType::kInt64));
    if (!result.ok()) return result.status();
    COHORT_RETURN_IF_ERROR(
        CopyResult(*result, counts.data(), counts.size(), DataType::kInt64, "allgather counts"));
    return counts;
  }
  Status s = WithComm([&](Communicator& comm) {
    std::vector<size_t> ones(comm.size(), 1);
    uint64_t mine = my_count;
    std::vector<uint64_t> all(comm.size());
    COHORT_RETURN_IF_ERROR(RunAllgather(comm, &mine, 1, all.data(), ones.data(), DataType::kInt64));
    for (int r = 0; r < comm.size(); ++r) counts[r] = all[r];
    return Status::OK();
  });
  if (!s.ok()) return s;
  return counts;
}

Status Allgather(const void* send, size_t send_count, void* recv, const size_t* recv_counts,
                 DataType type) {
  if (RunningEngine() != nullptr) {
    if (recv_counts == nullptr) return Status::InvalidArgument("allgather: recv_counts is null");
    Result<TensorResult> result = SubmitWaitAndTake(AllgatherRequest(
        g_runtime->NextSyncName("allgather"), send, {static_cast<int64_t>(send_count)}, type));
    if (!result.ok()) return result.status();
    size_t expected = 0;
    for (int p = 0; p < Size(); ++p) expected += recv_counts[p];
    return CopyResult(*result, recv, expected, type, "allgather");
  }
  return WithComm([&](Communicator& comm) {
    return RunAllgather(comm, send, send_count, recv, recv_counts, type);
  });
}

Status Broadcast(void* buf, size_t count, DataType type, int root) {
  if (RunningEngine() != nullptr) {
    return SubmitAndWait(BroadcastRequest(g_runtime->NextSyncName("broadcast"), buf,
                                          {static_cast<int64_t>(count)}, type, root));
  }
  return WithComm([&](Communicator& comm) { return RunBroadcast(comm, buf, count, type, root); });
}

Result<std::vector<size_t>> AlltoallCounts(const size_t* send_counts) {
  std::vector<size_t> counts(std::max(Size(), 0));
  if (RunningEngine() != nullptr) {
    if (send_counts == nullptr)
      return Status::InvalidArgument("alltoall counts: send_counts is null");
    std::vector<uint64_t> out(send_counts, send_counts + Size());
    Request r;
    r.what = Describe(g_runtime->NextSyncName("alltoall_counts"), RequestKind::kAlltoall,
                      {static_cast<int64_t>(Size())}, DataType::kInt64);
    r.what.splits.assign(Size(), 1);
    r.send = out.data();
    Result<TensorResult> result = SubmitWaitAndTake(std::move(r));
    if (!result.ok()) return result.status();
    COHORT_RETURN_IF_ERROR(
        CopyResult(*result, counts.data(), counts.size(), DataType::kInt64, "alltoall counts"));
    return counts;
  }
  Status s = WithComm([&](Communicator& comm) {
    if (send_counts == nullptr) {
      return comm.Fail(Status::InvalidArgument("alltoall counts: send_counts is null"));
    }
    std::vector<size_t> ones(comm.size(), 1);
    std::vector<uint64_t> out(send_counts, send_counts + comm.size()), in(comm.size());
    COHORT_RETURN_IF_ERROR(
        RunAlltoall(comm, out.data(), ones.data(), in.data(), ones.data(), DataType::kInt64));
    for (int r = 0; r < comm.size(); ++r) counts[r] = in[r];
    return Status::OK();
  });
  if (!s.ok()) return s;
  return counts;
}

Status Alltoall(const void* send, const size_t* send_counts, void* recv, const size_t* recv_counts,
                DataType type) {
  if (RunningEngine() != nullptr) {
    if (send_counts == nullptr || recv_counts == nullptr) {
      return Status::InvalidArgument("alltoall: send_counts and recv_counts are required");
    }
    Request r;
    const std::vector<int64_t> splits = ToRows(send_counts, Size());
    int64_t total = 0;
    size_t expected = 0;
    for (int p = 0; p < Size(); ++p) {
      total += splits[p];
      expected += recv_counts[p];
    }
    r.what = Describe(g_runtime->NextSyncName("alltoall"), RequestKind::kAlltoall, {total}, type);
    r.what.splits = splits;
    r.send = send;
    Result<TensorResult> result = SubmitWaitAndTake(std::move(r));
    if (!result.ok()) return result.status();
    return CopyResult(*result, recv, expected, type, "alltoall");
  }
  return WithComm([&](Communicator& comm) {
    return RunAlltoall(comm, send, send_counts, recv, recv_counts, type);
  });
}

Status Barrier() {
  if (RunningEngine() != nullptr) {
    Request r;
    r.what =
        Describe(g_runtime->NextSyncName("barrier"), RequestKind::kBarrier, {}, DataType::kUInt8);
    return SubmitAndWait(std::move(r));
  }
  return WithComm([&](Communicator& comm) { return RunBarrier(comm); });
}

Result<Handle> AllreduceAsync(const std::string& name, const void* send, void* recv,
                              const Shape& shape, DataType type, const AllreduceOptions& options,
                              DoneCallback done, const Device& device) {
  Request r = AllreduceRequest(name, send, recv, shape, type, options);
  return Submit(std::move(OnDevice(r, device)), std::move(done));
}

Result<std::vector<Handle>> GroupedAllreduceAsync(const std::vector<std::string>& names,
                                                  const std::vector<const void*>& sends,
                                                  const std::vector<void*>& recvs,
                                                  const std::vector<Shape>& shapes, DataType type,
                                                  const AllreduceOptions& options,
                                                  const Device& device) {
  if (g_runtime == nullptr) return NotRunning();
  if (sends.size() != names.size() || recvs.size() != names.size() ||
      shapes.size() != names.size()) {
    return Status::InvalidArgument(
        "grouped allreduce: names, sends, recvs and shapes differ in length");
  }
  const uint64_t group = g_runtime->NextGroupId();
  std::vector<Handle> handles;
  for (size_t i = 0; i < names.size(); ++i) {
    Request r = AllreduceRequest(names[i], sends[i], recvs[i], shapes[i], type, options);
    OnDevice(r, device);
    r.what.group_id = group;
    r.what.group_size = static_cast<uint32_t>(names.size());
    Result<Handle> h = Submit(std::move(r), nullptr);
    if (!h.ok()) return h.status();
    handles.push_back(*h);
  }
  return handles;
}

Result<Handle> BroadcastAsync(const std::string& name, void* buf, const Shape& shape, DataType type,
                              int root, DoneCallback done, int process_set, const Device& device) {
  Request r = BroadcastRequest(name, buf, shape, type, root);
  r.process_set = process_set;
  return Submit(std::move(OnDevice(r, device)), std::move(done));
}

Result<Handle> AllgatherAsync(const std::string& name, const void* send, const Shape& shape,
                              DataType type, DoneCallback done, int process_set) {
  Request r = AllgatherRequest(name, send, shape, type);
  r.process_set = process_set;
  return Submit(std::move(r), std::move(done));
}

Result<Handle> AllgatherIntoAsync(const std::string& name, const void* send, void* recv,
                                  size_t recv_elements, const Shape& shape, DataType type,
                                  DoneCallback done, int process_set, const Device& device) {
  Request r = AllgatherRequest(name, send, shape, type);
  r.process_set = process_set;
  COHORT_RETURN_IF_ERROR(OutputInto(&r, recv, recv_elements));
  return Submit(std::move(OnDevice(r, device)), std::move(done));
}

Result<Handle> BarrierAsync(const std::string& name, DoneCallback done, int process_set) {
  Request r;
  r.what = Describe(name, RequestKind::kBarrier, {}, DataType::kUInt8);
  r.process_set = process_set;
  return Submit(std::move(r), std::move(done));
}

Result<int> AddProcessSet(const std::vector<int>& ranks) {
  if (g_runtime == nullptr) return NotRunning();
  std::vector<int> sorted = ranks;
  // No ranks means every rank, as in Horovod (its ProcessSetTable fills an
  // empty list with all ranks; its test_torch.py adds the odd ranks of a
  // one-rank job, an empty list, and uses the set).
  if (sorted.empty()) {
    sorted.resize(Size());
    std::iota(sorted.begin(), sorted.end(), 0);
  }
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] < 0 || sorted[i] >= Size()) {
      return Status::InvalidArgument("add process set: rank " + std::to_string(sorted[i]) +
                                     " is not a rank of this job (0.." +
                                     std::to_string(Size() - 1) + ")");
    }
    if (i > 0 && sorted[i] == sorted[i - 1]) {
      return Status::InvalidArgument("add process set: rank " + std::to_string(sorted[i]) +
                                     " is listed twice");
    }
  }
  Request r;
  r.what = Describe(g_runtime->NextSyncName("add_process_set"), RequestKind::kAddProcessSet, {},
                    DataType::kUInt8);
  r.what.set_members.assign(sorted.begin(), sorted.end());
  Result<TensorResult> result = SubmitWaitAndTake(std::move(r));
  if (!result.ok()) return result.status();
  int32_t id = 0;
  if (result->data.size() != sizeof id) return Status::Internal("add process set: no id returned");
  std::memcpy(&id, result->data.data(), sizeof id);
  return static_cast<int>(id);
}

Status RemoveProcessSet(int process_set) {
  if (g_runtime == nullptr) return NotRunning();
  Request r;
  r.what = Describe(g_runtime->NextSyncName("remove_process_set"), RequestKind::kRemoveProcessSet,
                    {}, DataType::kUInt8);
  r.what.set_id = process_set;
  return SubmitAndWait(std::move(r));
}

// Until the engine starts, the job's own set is the only one: sets are added
// through the engine. So the queries below answer without starting it.
Result<std::vector<int>> ProcessSetRanks(int process_set) {
  Runtime* rt = g_runtime.get();
  if (rt == nullptr) return NotRunning();
  if (Engine* engine = rt->engine()) return engine->ProcessSetRanks(process_set);
  if (process_set != kGlobalProcessSet) return NoSuchProcessSet(process_set);
  return JobRanks(rt->comm().size());
}

Result<int> ProcessSetRank(int process_set) {
  Result<std::vector<int>> ranks = ProcessSetRanks(process_set);
  if (!ranks.ok()) return ranks.status();
  auto it = std::find(ranks->begin(), ranks->end(), Rank());
  return it == ranks->end() ? -1 : static_cast<int>(it - ranks->begin());
}

std::vector<int> ProcessSetIds() {
  Runtime* rt = g_runtime.get();
  if (rt == nullptr) return {};
  if (Engine* engine = rt->engine()) return engine->ProcessSetIds();
  return {kGlobalProcessSet};
}

Result<Handle> JoinAsync(DoneCallback done) { return Submit(JoinRequest(), std::move(done)); }

Result<int> Join() {
  Result<TensorResult> result = SubmitWaitAndTake(JoinRequest());
  if (!result.ok()) return result.status();
  return static_cast<int>(result->last_joined_rank);
}

Result<bool> Poll(Handle handle) {
  Engine* e = RunningEngine();
  if (e == nullptr) return NotRunning();
  Result<bool> done = e->handles().Poll(handle);
  if (!done.ok() || !*done) return done;
  return e->gpu().Done(handle);  // a GPU tensor: also run by the device
}

Status Wait(Handle handle, double timeout_seconds) {
  return WaitInterruptible(handle, timeout_seconds, nullptr);
}

Status WaitInterruptible(Handle handle, double timeout_seconds,
                         const std::function<bool()>& interrupted) {
  Engine* e = RunningEngine();
  if (e == nullptr) return NotRunning();
  const bool by_default = timeout_seconds < 0;
  if (by_default) timeout_seconds = g_runtime->settings().timeout_seconds;
  const Deadline deadline = Deadline::AfterSeconds(timeout_seconds);
  Status s = WaitOnHost(*e, handle, timeout_seconds, interrupted, deadline, by_default);
  if (!s.ok()) return s;
  return e->gpu().Wait(handle, deadline);  // a GPU tensor: until the device ran it
}

Result<Handle> ReduceScatterAsync(const std::string& name, const void* send, const Shape& shape,
                                  DataType type, ReduceOp op, const std::vector<int64_t>& recv_rows,
                                  DoneCallback done, int process_set, double prescale_factor,
                                  double postscale_factor) {
  return Submit(ReduceScatterRequest(name, send, shape, type, op, recv_rows, process_set,
                                     prescale_factor, postscale_factor),
                std::move(done));
}

Result<Handle> ReduceScatterIntoAsync(const std::string& name, const void* send, void* recv,
                                      size_t recv_elements, const Shape& shape, DataType type,
                                      ReduceOp op, const std::vector<int64_t>& recv_rows,
                                      DoneCallback done, int process_set, double prescale_factor,
                                      double postscale_factor, const Device& device) {
  Request r = ReduceScatterRequest(name, send, shape, type, op, recv_rows, process_set,
                                   prescale_factor, postscale_factor);
  COHORT_RETURN_IF_ERROR(OutputInto(&r, recv, recv_elements));
  return Submit(std::move(OnDevice(r, device)), std::move(done));
}

Result<Handle> AlltoallAsync(const std::string& name, const void* send, const Shape& shape,
                             DataType type, const std::vector<int64_t>& splits, DoneCallback done,
                             int process_set) {
  Request r;
  r.process_set = process_set;
  r.what = Describe(name, RequestKind::kAlltoall, shape, type);
  r.what.splits = splits;
  r.send = send;
  return Submit(std::move(r), std::move(done));
}

Status TakeResult(Handle handle, TensorResult* result) {
  Engine* e = RunningEngine();
  if (e == nullptr) return NotRunning();
  return e->handles().TakeOutput(handle, result);
}

Status StartTimeline(const std::string& path, bool mark_cycles) {
  if (g_runtime == nullptr) return NotRunning();
  return g_runtime->StartEngine().StartTimeline(path, mark_cycles);
}

EngineStats GetEngineStats() {
  Engine* e = RunningEngine();
  return e == nullptr ? EngineStats{} : e->Stats();
}

Status StopTimeline() {
  Engine* e = RunningEngine();
  return e == nullptr ? Status::OK() : e->StopTimeline();
}

Status OpenPointToPoint() {
  Runtime* rt = g_runtime.get();
  if (rt == nullptr) return NotRunning();
  return rt->OpenPointToPoint().status();
}

namespace {

Result<PointToPoint*> RunningPointToPoint(const char* what) {
  Runtime* rt = g_runtime.get();
  if (rt == nullptr) return NotRunning();
  PointToPoint* p2p = rt->point_to_point();
  if (p2p == nullptr) {
    return Status::NotInitialized(std::string(what) +
                                  ": point-to-point messages are not open: every rank must call "
                                  "cohort::OpenPointToPoint() first");
  }
  return p2p;
}

double TimeoutOrDefault(double timeout_seconds) {
  return timeout_seconds < 0 ? g_runtime->settings().timeout_seconds : timeout_seconds;
}

}  // namespace

Result<Handle> SendAsync(int dst, int64_t channel, int64_t tag, const void* data, size_t bytes,
                         double timeout_seconds) {
  Result<PointToPoint*> p2p = RunningPointToPoint("send");
  if (!p2p.ok()) return p2p.status();
  if (data == nullptr && bytes > 0) return Status::InvalidArgument("send: null data");
  return (*p2p)->Send(dst, channel, tag, data, bytes, TimeoutOrDefault(timeout_seconds));
}

Result<Handle> RecvAsync(int src, int64_t channel, int64_t tag, void* data, size_t bytes,
                         int* source, double timeout_seconds) {
  Result<PointToPoint*> p2p = RunningPointToPoint("recv");
  if (!p2p.ok()) return p2p.status();
  if (data == nullptr && bytes > 0) return Status::InvalidArgument("recv: null data");
  return (*p2p)->Recv(src, channel, tag, data, bytes, source, TimeoutOrDefault(timeout_seconds));
}

Result<std::string> PeerHost(int rank) {
  Runtime* rt = g_runtime.get();
  if (rt == nullptr) return NotRunning();
  const Mesh& mesh = rt->comm().mesh();
  if (rank < 0 || rank >= mesh.size) {
    return Status::InvalidArgument("peer host: rank " + std::to_string(rank) +
                                   " is outside the job of " + std::to_string(mesh.size));
  }
  std::string host;
  int port = 0;
  COHORT_RETURN_IF_ERROR(ParseHostPort(mesh.peers[rank].address, "mesh address", &host, &port));
  return host;
}

void Release(Handle handle) {
  Engine* e = RunningEngine();
  if (e == nullptr) return;
  e->gpu().Release(handle);
  e->handles().Release(handle);
}

Status SynchronizeOnStream(Handle handle, void* stream, double timeout_seconds) {
  Engine* e = RunningEngine();
  if (e == nullptr) return NotRunning();
  const bool by_default = timeout_seconds < 0;
  if (by_default) timeout_seconds = g_runtime->settings().timeout_seconds;
  COHORT_RETURN_IF_ERROR(WaitOnHost(*e, handle, timeout_seconds, nullptr,
                                    Deadline::AfterSeconds(timeout_seconds), by_default));
  return e->gpu().Join(handle, stream);
}

Runtime* RunningRuntime() { return g_runtime.get(); }

bool CudaBuilt() { return true; }

namespace {

// The running job's provider, or one for this call (Horovod asks before init).
template <typename F>
auto WithGpuProvider(F f) {
  if (Runtime* rt = g_runtime.get()) return f(rt->gpu_provider());
  Result<gpu::GpuStackOptions> options = gpu::GpuStackOptionsFromEnv(ProcessEnv());
  std::unique_ptr<GpuProvider> provider =
      LoadingGpuProvider(options.ok() ? *options : gpu::GpuStackOptions{});
  return f(*provider);
}

}  // namespace

int NcclBuilt() {
  return WithGpuProvider([](GpuProvider& p) { return p.NcclVersion(); });
}

std::string GpuReport() {
  return WithGpuProvider([](GpuProvider& p) { return p.Report(); });
}

}  // namespace cohort
