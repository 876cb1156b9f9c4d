// The engine loop: collect, negotiate, execute, complete.
#include "engine/engine.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>
#include <utility>

#include "collectives/collectives.h"
#include "collectives/reduce_kernels.h"
#include "common/logging.h"
#include "common/value_convert.h"

namespace cohort {

namespace {

// Local checks of the rows-per-rank argument of reduce-scatter and alltoall.
Status CheckSplits(const Announcement& a, int size) {
  const bool alltoall = a.kind == RequestKind::kAlltoall;
  if (!alltoall && a.kind != RequestKind::kReduceScatter) return Status::OK();
  if (a.shape.empty()) return Status::InvalidArgument("needs at least one dimension");
  if (a.splits.empty() && !alltoall) return Status::OK();  // even split
  if (static_cast<int>(a.splits.size()) != size) {
    return Status::InvalidArgument("has " + std::to_string(a.splits.size()) + " splits for " +
                                   std::to_string(size) + " ranks");
  }
  int64_t sum = 0;
  for (int64_t rows : a.splits) {
    if (rows < 0) return Status::InvalidArgument("has a negative split");
    sum += rows;
  }
  if (sum != a.shape[0]) {
    return Status::InvalidArgument("splits add up to " + std::to_string(sum) +
                                   " rows but the first dimension is " +
                                   std::to_string(a.shape[0]));
  }
  return Status::OK();
}

// A tensor of `a`'s shape filled with the identity of its reduce op.
std::vector<unsigned char> IdentityBuffer(const Announcement& a) {
  const size_t esize = DataTypeSize(a.dtype);
  std::vector<unsigned char> buf(std::max<uint64_t>(a.elements(), 1) * esize, 0);
  if (a.op == ReduceOp::kSum || a.op == ReduceOp::kAverage || a.op == ReduceOp::kAdasum) {
    return buf;  // zeros (Adasum(x, 0) = x)
  }
  const double value = a.op == ReduceOp::kProduct ? 1.0
                       : a.op == ReduceOp::kMin   ? std::numeric_limits<double>::infinity()
                                                  : -std::numeric_limits<double>::infinity();
  unsigned char one[8];
  StoreAs(a.dtype, value, one);  // saturates to the type's extreme for integers
  for (size_t i = 0; i < a.elements(); ++i) std::memcpy(&buf[i * esize], one, esize);
  return buf;
}

// While alive, records the phases inside the collectives run on `comm` as
// timeline spans of `names` (nothing when the timeline is off).
class PhaseSpans {
 public:
  PhaseSpans(Communicator& comm, Timeline* tl, const std::vector<std::string>& names)
      : comm_(comm) {
    if (tl == nullptr) return;
    comm.set_phase_observer(
        [tl, &names](const char* phase, Clock::time_point start, Clock::time_point end) {
          for (const std::string& name : names) tl->Span(name, phase, start, end);
        });
  }
  ~PhaseSpans() {
    if (comm_.observing_phases()) comm_.set_phase_observer(nullptr);
  }

 private:
  Communicator& comm_;
};

// Rows rank r receives in a reduce-scatter.
std::vector<int64_t> ScatterRows(const Announcement& a, int size) {
  if (!a.splits.empty()) return a.splits;
  std::vector<int64_t> rows(size, a.shape[0] / size);
  for (int r = 0; r < a.shape[0] % size; ++r) ++rows[r];
  return rows;
}

}  // namespace

Engine::Engine(Communicator& comm, EngineOptions options)
    : comm_(comm), options_(options), leaving_(comm.size(), false) {
  sets_[kGlobalProcessSet] = std::make_unique<ProcessSet>(kGlobalProcessSet, JobRanks(comm.size()),
                                                          comm, options.cache_capacity);
  if (!options_.timeline_path.empty()) {
    Status s = StartTimeline(options_.timeline_path);
    if (!s.ok()) {
      COHORT_LOG(kWarning) << "COHORT_TIMELINE: " << s.message();
    }
  }
  thread_ = std::thread([this] { Loop(); });
}

Status Engine::StartTimeline(const std::string& path, bool mark_cycles) {
  std::string mine = path;
  const size_t at = mine.find("{rank}");
  std::shared_ptr<Timeline> next;
  if (at != std::string::npos || comm_.rank() == 0) {
    if (at != std::string::npos) mine.replace(at, 6, std::to_string(comm_.rank()));
    Result<std::unique_ptr<Timeline>> opened = Timeline::Open(mine, comm_.rank());
    if (!opened.ok()) return opened.status();
    next = std::move(opened).value();
  }
  std::shared_ptr<Timeline> old;
  {
    std::lock_guard<std::mutex> lock(timeline_mu_);
    old = std::exchange(timeline_, next);
    mark_cycles_ = mark_cycles;
  }
  return old ? old->Close() : Status::OK();
}

Status Engine::StopTimeline() {
  std::shared_ptr<Timeline> old;
  {
    std::lock_guard<std::mutex> lock(timeline_mu_);
    old = std::exchange(timeline_, nullptr);
  }
  return old ? old->Close() : Status::OK();
}

Engine::~Engine() { Shutdown(); }

Result<int64_t> Engine::Enqueue(Request request, CompletionCallback callback) {
  const Announcement& a = request.what;
  std::string what = std::string(RequestKindName(a.kind)) + " of tensor '" + a.name + "'";
  if (request.process_set != kGlobalProcessSet) {
    what += " in process set " + std::to_string(request.process_set);
  }
  if (a.name.empty()) return Status::InvalidArgument("every tensor operation needs a name");
  if (!IsValidDataType(static_cast<int>(a.dtype)) || !IsValidReduceOp(static_cast<int>(a.op)) ||
      a.compression < 0 || a.compression > 2) {
    return Status::InvalidArgument(what + ": invalid data type, reduce op or compression value");
  }
  if (a.op == ReduceOp::kAdasum &&
      (a.kind != RequestKind::kAllreduce || !IsFloatingPoint(a.dtype))) {
    return Status::InvalidArgument(what +
                                   ": op adasum is only for allreduce of floating-point "
                                   "tensors, got " +
                                   DataTypeName(a.dtype));
  }
  for (int64_t d : a.shape) {
    if (d < 0) return Status::InvalidArgument(what + ": negative dimension in its shape");
  }
  const bool needs_send = a.kind == RequestKind::kAllreduce || a.kind == RequestKind::kAllgather ||
                          a.kind == RequestKind::kReduceScatter || a.kind == RequestKind::kAlltoall;
  const bool needs_recv = a.kind == RequestKind::kAllreduce || a.kind == RequestKind::kBroadcast;
  if (a.elements() > 0 &&
      ((needs_send && request.send == nullptr) || (needs_recv && request.recv == nullptr))) {
    return Status::InvalidArgument(what + ": null buffer for " + std::to_string(a.elements()) +
                                   " elements");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.ok()) return failure_;
  if (stopped_ || shutdown_requested_) {
    return Status::NotInitialized(what + ": the engine is shutting down");
  }
  auto set = sets_.find(request.process_set);
  if (set == sets_.end()) {
    return Status::InvalidArgument(what + ": " + NoSuchProcessSet(request.process_set).message());
  }
  if (!set->second->member()) {
    return Status::InvalidArgument(what + ": rank " + std::to_string(comm_.rank()) +
                                   " is not a member of process set " +
                                   std::to_string(request.process_set));
  }
  const bool job_wide = a.kind == RequestKind::kJoin || a.kind == RequestKind::kAddProcessSet ||
                        a.kind == RequestKind::kRemoveProcessSet;
  if (job_wide && request.process_set != kGlobalProcessSet) {
    return Status::InvalidArgument(what + ": only runs over the whole job (process set 0)");
  }
  COHORT_RETURN_IF_ERROR(CheckSplits(a, set->second->size()).WithContext(what));
  const auto key = std::make_pair(request.process_set, a.name);
  if (in_flight_.count(key) > 0) {
    return Status::InvalidArgument(
        what + ": a tensor named '" + a.name + "' is already in flight on rank " +
        std::to_string(comm_.rank()) + "; wait for it before submitting the name again");
  }
  const int64_t handle = handles_.Create(std::move(callback));
  request.handle = handle;
  in_flight_[key] = request;
  set->second->queue.push_back(std::move(request));  // `a` refers into `request`: unusable now
  wake_.notify_one();
  return handle;
}

Result<std::vector<int>> Engine::ProcessSetRanks(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto set = sets_.find(id);
  if (set == sets_.end()) {
    return NoSuchProcessSet(id);
  }
  return set->second->ranks;
}

std::vector<int> Engine::ProcessSetIds() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> ids;
  for (const auto& entry : sets_) ids.push_back(entry.first);
  return ids;
}

Status Engine::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_requested_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

void Engine::Abort(const Status& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_requested_ = true;
  }
  comm_.Interrupt(reason);  // the engine thread's exchange fails at once
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  // Publishes the reason if the engine thread never touched the links again.
  (void)comm_.Fail(reason);
  Fail(reason);
}

void Engine::Loop() {
  for (;;) {
    Status s = Cycle();
    if (!s.ok()) {
      Fail(s);
      return;
    }
    if (wait_report_.wanted()) wait_report_.Answer(SnapshotWaiting());
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
  }
}

Status Engine::Cycle() {
  std::map<int, std::vector<Request>> queued;
  bool shutdown = false;
  {
    // No fixed sleep: a submission wakes the loop at once; the cycle time
    // only bounds how long an idle rank waits before joining the next round.
    std::unique_lock<std::mutex> lock(mu_);
    auto has_work = [&] {
      for (const auto& [id, set] : sets_) {
        if (!set->queue.empty()) return true;
      }
      return shutdown_requested_;
    };
    wake_.wait_for(lock, std::chrono::duration<double, std::milli>(options_.cycle_time_ms),
                   has_work);
    for (auto& [id, set] : sets_) {
      if (!set->queue.empty()) queued[id] = std::exchange(set->queue, {});
    }
    shutdown = shutdown_requested_;
  }
  bool mark_cycle = false;
  {
    std::lock_guard<std::mutex> lock(timeline_mu_);
    tl_ = timeline_;
    mark_cycle = mark_cycles_;
  }
  if (tl_ && mark_cycle) tl_->Instant("engine", "CYCLE_START", Clock::now());
  bool stop = false;
  COHORT_RETURN_IF_ERROR(
      CycleSet(*sets_.at(kGlobalProcessSet), queued[kGlobalProcessSet], shutdown, &stop));
  if (stop) {
    FailUnfinished();
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    return Status::OK();
  }
  // Sets added in this cycle start with the next one; removed ones are gone.
  for (auto& [id, set] : sets_) {
    if (id == kGlobalProcessSet || !set->member()) continue;
    COHORT_RETURN_IF_ERROR(CycleSet(*set, queued[id], false, nullptr));
  }
  // Every rank learned who asked to stop from set 0's exchange, so all fail
  // the same tensors at the same point.
  for (auto& [id, set] : sets_) {
    if (set->member()) FailAbandoned(*set);
  }
  for (const auto& [id, requests] : queued) {
    if (sets_.count(id) > 0) continue;
    for (const Request& r : requests) {
      if (TakePending(id, r.what.name).handle != 0) {
        handles_.Complete(
            r.handle, Status::InvalidArgument("tensor '" + r.what.name + "': process set " +
                                              std::to_string(id) + " was removed before it ran"));
      }
    }
  }
  return Status::OK();
}

Status Engine::CycleSet(ProcessSet& set, const std::vector<Request>& queued, bool shutdown,
                        bool* stop) {
  CycleMessage mine;
  Announce(set, queued, &mine);
  mine.shutdown = shutdown;
  InspectStalls(set, &mine);
  if (tl_) {
    const Clock::time_point now = Clock::now();
    for (const Announcement& a : mine.announcements) {
      tl_->Begin(a.name, std::string("NEGOTIATE_") + RequestKindName(a.kind), now);
    }
  }
  std::vector<CycleMessage> all;
  COHORT_RETURN_IF_ERROR(Exchange(set, mine, &all));
  for (size_t r = 0; r < all.size(); ++r) {
    COHORT_RETURN_IF_ERROR(Expand(set, static_cast<int>(r), &all[r]));
  }
  if (tl_) {
    // When each rank's announcement of a tensor arrived here.
    const Clock::time_point now = Clock::now();
    for (size_t r = 0; r < all.size(); ++r) {
      for (const Announcement& a : all[r].announcements) {
        tl_->Instant(a.name, "rank " + std::to_string(set.ranks[r]) + " ready", now);
      }
    }
  }
  // The set's first rank decided on stalls before this cycle's announcements;
  // every rank applies its decision first, so all tables stay identical.
  for (const std::string& name : all[0].stalled) FailStalled(set, name);
  std::vector<std::vector<Announcement>> per_rank;
  bool all_shutdown = true;
  for (size_t r = 0; r < all.size(); ++r) {
    per_rank.push_back(std::move(all[r].announcements));
    all_shutdown = all_shutdown && all[r].shutdown;
    if (all[r].shutdown) leaving_[set.ranks[r]] = true;  // only set 0 carries the flag
  }
  set.table.Apply(per_rank);
  // Where ranks share memory, fused tensors are reduced in place from their
  // own buffers (no copies), so tensors of any size fuse; elsewhere large ones
  // run alone rather than pay for copies through the fusion buffer.
  const uint64_t max_fused = CanAllreducePieces(*set.comm) ? options_.fusion_threshold_bytes
                                                           : options_.fusion_max_tensor_bytes;
  const std::vector<Response> responses =
      set.table.TakeResponses(options_.fusion_threshold_bytes, max_fused);
  if (!responses.empty()) cycles_.fetch_add(1, std::memory_order_relaxed);
  // Every rank caches the same successful announcements in the same order.
  for (const Response& response : responses) {
    if (!response.error.ok() || response.kind == RequestKind::kAllgather ||
        response.kind == RequestKind::kAlltoall || response.kind == RequestKind::kJoin ||
        response.kind == RequestKind::kAddProcessSet ||
        response.kind == RequestKind::kRemoveProcessSet) {
      continue;  // per-rank shapes or splits differ, or never repeated: nothing to share
    }
    for (const Announcement& a : response.what) set.cache.Insert(a);
  }
  const Clock::time_point ready = Clock::now();
  if (tl_) {
    for (const Response& response : responses) {
      for (const std::string& name : response.names) tl_->End(name, ready);  // NEGOTIATE_*
    }
  }
  for (const Response& response : responses) {
    if (tl_) {
      const Clock::time_point start = Clock::now();
      for (const std::string& name : response.names) tl_->Span(name, "QUEUE", ready, start);
    }
    COHORT_RETURN_IF_ERROR(Execute(set, response));
  }
  if (stop != nullptr) *stop = all_shutdown;
  return Status::OK();
}

void Engine::FailUnfinished() {
  // Every rank has stopped submitting (all are in leaving_): what is still
  // unmatched never will be.
  for (auto& [id, set] : sets_) {
    if (set->member()) FailAbandoned(*set);
  }
  FailSet(-1, Status::NotInitialized("the engine shut down before this operation ran"));
}

void Engine::FailAbandoned(ProcessSet& set) {
  // Runs every cycle: skip the table walk until some rank asks to stop.
  if (std::find(leaving_.begin(), leaving_.end(), true) == leaving_.end()) return;
  for (const auto& [name, missing] : set.table.Waiting()) {
    std::vector<int> left;
    for (int r : missing) {
      if (leaving_[set.ranks[r]]) left.push_back(r);
    }
    if (left.empty()) continue;
    set.table.Drop(name);
    Request r = TakePending(set.id, name);
    if (r.handle != 0) {
      handles_.Complete(r.handle,
                        Status::PeerFailure("tensor '" + name + "' was never submitted by " +
                                            DescribeRanks(set, left) + " before they shut down"));
    }
  }
}

void Engine::FailSet(int id, const Status& status) {
  std::vector<int64_t> handles;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = in_flight_.begin(); it != in_flight_.end();) {
      if (id >= 0 && it->first.first != id) {
        ++it;
        continue;
      }
      handles.push_back(it->second.handle);
      it = in_flight_.erase(it);
    }
    for (auto& [set_id, set] : sets_) {
      if (id < 0 || set_id == id) set->queue.clear();
    }
  }
  for (int64_t h : handles) handles_.Complete(h, status);
}

void Engine::Announce(const ProcessSet& set, const std::vector<Request>& queued,
                      CycleMessage* mine) const {
  size_t hits = 0;
  for (const Request& r : queued) {
    const int slot = set.cache.Find(r.what);
    if (slot < 0) {
      mine->announcements.push_back(r.what);
      continue;
    }
    if (mine->cached.empty()) mine->cached.assign((set.cache.capacity() + 7) / 8, 0);
    mine->cached[slot / 8] |= static_cast<uint8_t>(1u << (slot % 8));
    ++hits;
  }
  if (hits > 0) {
    COHORT_LOG(kDebug) << "rank " << comm_.rank() << ": " << hits << " of " << queued.size()
                       << " announcements from the response cache";
  }
}

Status Engine::Expand(ProcessSet& set, int rank, CycleMessage* message) const {
  for (size_t byte = 0; byte < message->cached.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      if (!(message->cached[byte] & (1u << bit))) continue;
      const Announcement* a = set.cache.At(byte * 8 + bit);
      if (a == nullptr) {
        return set.comm->Fail(Status::Internal("rank " + std::to_string(set.ranks[rank]) +
                                               " announced empty response-cache slot " +
                                               std::to_string(byte * 8 + bit)));
      }
      message->announcements.push_back(*a);
    }
  }
  return Status::OK();
}

std::string Engine::DescribeRanks(const ProcessSet& set, const std::vector<int>& ranks) const {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + set.comm->mesh().Describe(r);
  return out;
}

void Engine::InspectStalls(ProcessSet& set, CycleMessage* mine) {
  if (set.comm->rank() != 0) return;
  const Clock::time_point now = Clock::now();
  if (now >= set.next_stall_report) {
    set.next_stall_report = now + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options_.stall_check_seconds));
    for (const auto& [name, missing] :
         set.table.WaitingLongerThan(std::chrono::duration<double>(options_.stall_check_seconds))) {
      COHORT_LOG(kWarning) << "stall inspector: tensor '" << name << "'"
                           << (set.id == kGlobalProcessSet
                                   ? ""
                                   : " of process set " + std::to_string(set.id))
                           << " has waited more than " << options_.stall_check_seconds
                           << " s (COHORT_STALL_CHECK_TIME); not yet submitted by "
                           << DescribeRanks(set, missing);
    }
  }
  if (options_.stall_shutdown_seconds <= 0) return;
  for (const auto& [name, missing] : set.table.WaitingLongerThan(
           std::chrono::duration<double>(options_.stall_shutdown_seconds))) {
    mine->stalled.push_back(name);
  }
}

void Engine::FailStalled(ProcessSet& set, const std::string& name) {
  std::vector<int> missing;
  for (const auto& [waiting, ranks] : set.table.Waiting()) {
    if (waiting == name) missing = ranks;
  }
  set.table.Drop(name);
  Request r = TakePending(set.id, name);
  if (r.handle == 0) return;
  std::ostringstream message;
  message << "tensor '" << name << "' stalled: " << DescribeRanks(set, missing)
          << " did not submit it within " << options_.stall_shutdown_seconds
          << " s (COHORT_STALL_SHUTDOWN_TIME)";
  handles_.Complete(r.handle, Status::Timeout(message.str()));
}

Status Engine::Exchange(ProcessSet& set, const CycleMessage& mine, std::vector<CycleMessage>* all) {
  Communicator& comm = *set.comm;
  const int n = comm.size();
  const std::string message = EncodeCycleMessage(mine);
  std::vector<size_t> ones(n, 1), sizes(n);
  uint64_t my_size = message.size();
  std::vector<uint64_t> all_sizes(n);
  COHORT_RETURN_IF_ERROR(
      RunAllgather(comm, &my_size, 1, all_sizes.data(), ones.data(), DataType::kInt64));
  size_t total = 0;
  for (int r = 0; r < n; ++r) total += sizes[r] = all_sizes[r];
  std::string bytes(total, '\0');
  COHORT_RETURN_IF_ERROR(RunAllgather(comm, message.data(), message.size(), bytes.data(),
                                      sizes.data(), DataType::kUInt8));
  all->assign(n, {});
  size_t at = 0;
  for (int r = 0; r < n; ++r) {
    if (!DecodeCycleMessage(bytes.substr(at, sizes[r]), &(*all)[r])) {
      return comm.Fail(Status::Internal("malformed negotiation message from rank " +
                                        std::to_string(set.ranks[r])));
    }
    at += sizes[r];
  }
  return Status::OK();
}

WaitSnapshot Engine::SnapshotWaiting() const {
  WaitSnapshot snapshot;
  for (const auto& [id, set] : sets_) {
    if (!set->member()) continue;
    const int me = set->comm->rank();
    for (const auto& [name, missing] : set->table.Waiting()) {
      snapshot.missing[{id, name}] = DescribeRanks(*set, missing);
      if (std::find(missing.begin(), missing.end(), me) != missing.end()) {
        snapshot.not_submitted_here[id].push_back(name);
      }
    }
  }
  return snapshot;
}

Status Engine::ExplainTimeout(int64_t handle, double timeout_seconds) {
  std::string what = "handle " + std::to_string(handle), name;
  int set_id = kGlobalProcessSet;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, request] : in_flight_) {
      if (request.handle != handle) continue;
      set_id = key.first;
      name = key.second;
      what = std::string(RequestKindName(request.what.kind)) + " '" + name + "'";
      break;
    }
  }
  if (name.empty()) return Status::Timeout(what + " did not complete in time");
  std::optional<WaitSnapshot> snapshot = wait_report_.Ask(std::chrono::milliseconds(1000));
  if (!snapshot) {
    // The engine thread is inside a collective whose own deadline counts from
    // its last progress and is checked between polls, so it may fire a little
    // after ours; its error names the peer it waits for. Give it that moment.
    Status late = handles_.Wait(handle, Deadline::AfterSeconds(std::min(timeout_seconds, 3.0)));
    Result<bool> done = handles_.Poll(handle);
    if (done.ok() && *done)
      return late.ok() ? late : Status(late.code(), what + ": " + late.message());
  }
  return Status::Timeout(DescribeTimedOutWait(what, set_id, name, timeout_seconds, snapshot));
}

Request Engine::TakePending(int set, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_flight_.find({set, name});
  if (it == in_flight_.end()) return Request{};
  Request r = std::move(it->second);
  in_flight_.erase(it);
  return r;
}

Status Engine::Execute(ProcessSet& set, const Response& response) {
  if (!response.error.ok()) {
    // Arguments that disagree fail these names on every rank; the engine and
    // the other tensors carry on.
    for (const std::string& name : response.names) {
      if (tl_) {
        std::string args = "{\"error\":";
        AppendJsonString(&args, response.error.message());
        tl_->Instant(name, "ERROR", Clock::now(), args + "}");
      }
      Request r = TakePending(set.id, name);
      if (r.handle != 0) handles_.Complete(r.handle, response.error);
    }
    return Status::OK();
  }
  PhaseSpans phases(*set.comm, tl_.get(), response.names);
  if (response.kind == RequestKind::kAllreduce) return ExecuteAllreduce(set, response);
  if (response.kind == RequestKind::kJoin) {
    Request r = TakePending(set.id, kJoinName);
    TensorResult result;
    result.last_joined_rank = response.last_joined_rank;
    if (r.handle != 0) handles_.Complete(r.handle, Status::OK(), std::move(result));
    return Status::OK();
  }
  Request r = TakePending(set.id, response.names[0]);
  if (response.kind == RequestKind::kAllgather) return ExecuteAllgather(set, r, response);
  if (response.kind == RequestKind::kReduceScatter) return ExecuteReduceScatter(set, r);
  if (response.kind == RequestKind::kAlltoall) return ExecuteAlltoall(set, r, response);
  if (response.kind == RequestKind::kAddProcessSet ||
      response.kind == RequestKind::kRemoveProcessSet) {
    return ExecuteProcessSetChange(r, response.what[0]);
  }
  const Announcement& a = r.what;
  const Clock::time_point start = Clock::now();
  Status s = response.kind == RequestKind::kBroadcast
                 ? RunBroadcast(*set.comm, r.recv, a.elements(), a.dtype, a.root)
                 : RunBarrier(*set.comm);
  if (tl_) tl_->Span(a.name, RequestKindName(a.kind), start, Clock::now());
  handles_.Complete(r.handle, s);
  return s;
}

Status Engine::ExecuteAllreduce(ProcessSet& set, const Response& response) {
  std::vector<Request> reqs;
  std::vector<std::vector<unsigned char>>
      identity;  // buffers this rank takes part with after joining
  for (size_t i = 0; i < response.names.size(); ++i) {
    Request r = TakePending(set.id, response.names[i]);
    if (r.handle == 0) {  // joined: contribute the op's identity, discard the result
      r.what = response.what[i];
      identity.push_back(IdentityBuffer(r.what));
      r.send = r.recv = identity.back().data();
    }
    reqs.push_back(std::move(r));
  }
  const Announcement& a = reqs[0].what;
  Status s;
  if (reqs.size() == 1 || a.op == ReduceOp::kAdasum) {
    // Adasum's dot products are per tensor, so fused Adasum tensors run one by one.
    for (const Request& r : reqs) {
      CountAllreduce(1, r.what.elements() * DataTypeSize(a.dtype), /*fused=*/false);
      const Clock::time_point start = Clock::now();
      if (s.ok()) {
        s = RunAllreduce(*set.comm, r.send, r.recv, r.what.elements(), a.dtype, a.op, a.prescale,
                         a.postscale, AllreduceAlgorithm::kAuto,
                         static_cast<Compression>(a.compression));
      }
      if (tl_) tl_->Span(r.what.name, "ALLREDUCE", start, Clock::now());
    }
  } else if (a.compression == 0 && CanAllreducePieces(*set.comm)) {
    std::vector<AllreducePiece> pieces;
    size_t total = 0;
    for (const Request& r : reqs) {
      pieces.push_back({r.send, r.recv, r.what.elements()});
      total += r.what.elements();
    }
    CountAllreduce(reqs.size(), total * DataTypeSize(a.dtype), /*fused=*/true);
    const Clock::time_point start = Clock::now();
    s = RunAllreducePieces(*set.comm, pieces, a.dtype, a.op, a.prescale, a.postscale);
    if (tl_) {
      const std::string args = "{\"fused_tensors\":" + std::to_string(reqs.size()) +
                               ",\"fused_bytes\":" + std::to_string(total * DataTypeSize(a.dtype)) +
                               ",\"in_place\":true}";
      const Clock::time_point end = Clock::now();
      for (const Request& r : reqs) tl_->Span(r.what.name, "ALLREDUCE", start, end, args);
    }
  } else {
    const Clock::time_point t0 = Clock::now();
    const size_t esize = DataTypeSize(a.dtype);
    size_t total = 0;
    for (const Request& r : reqs) total += r.what.elements();
    CountAllreduce(reqs.size(), total * esize, /*fused=*/true);
    unsigned char* buf = fusion_.Reserve(total * esize);
    size_t at = 0;
    for (const Request& r : reqs) {
      const size_t bytes = r.what.elements() * esize;
      if (bytes > 0) std::memcpy(buf + at, r.send, bytes);
      at += bytes;
    }
    const Clock::time_point t1 = Clock::now();
    s = RunAllreduce(*set.comm, buf, buf, total, a.dtype, a.op, a.prescale, a.postscale,
                     AllreduceAlgorithm::kAuto, static_cast<Compression>(a.compression));
    const Clock::time_point t2 = Clock::now();
    at = 0;
    for (const Request& r : reqs) {
      const size_t bytes = r.what.elements() * esize;
      if (s.ok() && bytes > 0) std::memcpy(r.recv, buf + at, bytes);
      at += bytes;
    }
    if (tl_) RecordFusedSpans(reqs, total * esize, t0, t1, t2, Clock::now());
  }
  for (const Request& r : reqs) {
    if (r.handle != 0) handles_.Complete(r.handle, s);
  }
  return s;
}

void Engine::CountAllreduce(size_t tensors, size_t bytes, bool fused) {
  allreduces_.fetch_add(1, std::memory_order_relaxed);
  allreduced_tensors_.fetch_add(tensors, std::memory_order_relaxed);
  if (!fused) return;
  fused_allreduces_.fetch_add(1, std::memory_order_relaxed);
  fused_tensors_.fetch_add(tensors, std::memory_order_relaxed);
  fused_bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

EngineStats Engine::Stats() const {
  EngineStats out;
  out.cycles = cycles_.load(std::memory_order_relaxed);
  out.allreduces = allreduces_.load(std::memory_order_relaxed);
  out.allreduced_tensors = allreduced_tensors_.load(std::memory_order_relaxed);
  out.fused_allreduces = fused_allreduces_.load(std::memory_order_relaxed);
  out.fused_tensors = fused_tensors_.load(std::memory_order_relaxed);
  out.fused_bytes = fused_bytes_.load(std::memory_order_relaxed);
  return out;
}

void Engine::RecordFusedSpans(const std::vector<Request>& reqs, size_t bytes, Clock::time_point t0,
                              Clock::time_point t1, Clock::time_point t2, Clock::time_point t3) {
  const std::string args = "{\"fused_tensors\":" + std::to_string(reqs.size()) +
                           ",\"fused_bytes\":" + std::to_string(bytes) + "}";
  for (const Request& r : reqs) {
    tl_->Span(r.what.name, "MEMCPY_IN_FUSION_BUFFER", t0, t1);
    tl_->Span(r.what.name, "ALLREDUCE", t1, t2, args);
    tl_->Span(r.what.name, "MEMCPY_OUT_FUSION_BUFFER", t2, t3);
  }
}

Status Engine::ExecuteAllgather(ProcessSet& set, const Request& r, const Response& response) {
  Communicator& comm = *set.comm;
  const Announcement& a = r.what;
  const int n = comm.size();
  const uint64_t row = a.row_elements();
  std::vector<size_t> counts(n);
  int64_t rows = 0;
  for (int p = 0; p < n; ++p) {
    counts[p] = static_cast<size_t>(response.rows_per_rank[p]) * row;
    rows += response.rows_per_rank[p];
  }
  std::vector<unsigned char> out(static_cast<size_t>(rows) * row * DataTypeSize(a.dtype));
  const Clock::time_point start = Clock::now();
  Status s = RunAllgather(comm, r.send, counts[comm.rank()], out.data(), counts.data(), a.dtype);
  if (tl_) tl_->Span(a.name, "ALLGATHER", start, Clock::now());
  TensorResult result;
  result.data = std::move(out);
  result.shape = a.shape.empty() ? std::vector<int64_t>{rows} : a.shape;
  result.shape[0] = rows;
  handles_.Complete(r.handle, s, std::move(result));
  return s;
}

Status Engine::ExecuteReduceScatter(ProcessSet& set, const Request& r) {
  Communicator& comm = *set.comm;
  const Announcement& a = r.what;
  const int n = comm.size();
  const std::vector<int64_t> rows = ScatterRows(a, n);
  std::vector<size_t> counts(n);
  for (int p = 0; p < n; ++p) counts[p] = static_cast<size_t>(rows[p]) * a.row_elements();
  TensorResult result;
  result.data.resize(counts[comm.rank()] * DataTypeSize(a.dtype));
  result.shape = a.shape;
  result.shape[0] = rows[comm.rank()];
  const Clock::time_point start = Clock::now();
  const void* send = r.send;
  std::vector<unsigned char> scaled;
  if (a.prescale != 1.0) {
    scaled.resize(a.elements() * DataTypeSize(a.dtype));
    ScaleCopy(scaled.data(), r.send, a.elements(), a.dtype, a.prescale);
    send = scaled.data();
  }
  Status s = RunReduceScatter(comm, send, result.data.data(), counts.data(), a.dtype, a.op);
  if (s.ok() && a.postscale != 1.0) {
    ScaleCopy(result.data.data(), result.data.data(), counts[comm.rank()], a.dtype, a.postscale);
  }
  if (tl_) tl_->Span(a.name, "REDUCESCATTER", start, Clock::now());
  handles_.Complete(r.handle, s, std::move(result));
  return s;
}

Status Engine::ExecuteAlltoall(ProcessSet& set, const Request& r, const Response& response) {
  Communicator& comm = *set.comm;
  const Announcement& a = r.what;
  const int n = comm.size(), me = comm.rank();
  const uint64_t row = a.row_elements();
  std::vector<size_t> send_counts(n), recv_counts(n);
  TensorResult result;
  int64_t rows = 0;
  for (int p = 0; p < n; ++p) {
    send_counts[p] = static_cast<size_t>(a.splits[p]) * row;
    const int64_t from_p = response.splits_by_rank[p][me];
    recv_counts[p] = static_cast<size_t>(from_p) * row;
    result.received_splits.push_back(from_p);
    rows += from_p;
  }
  result.data.resize(static_cast<size_t>(rows) * row * DataTypeSize(a.dtype));
  result.shape = a.shape;
  result.shape[0] = rows;
  const Clock::time_point start = Clock::now();
  Status s = RunAlltoall(comm, r.send, send_counts.data(), result.data.data(), recv_counts.data(),
                         a.dtype);
  if (tl_) tl_->Span(a.name, "ALLTOALL", start, Clock::now());
  handles_.Complete(r.handle, s, std::move(result));
  return s;
}

Status Engine::ExecuteProcessSetChange(const Request& r, const Announcement& what) {
  Status s;
  TensorResult result;
  if (what.kind == RequestKind::kAddProcessSet) {
    // Ranks were checked (in range, ascending, no repeats) where the call was made.
    const int id = next_set_id_++;
    std::vector<int> ranks(what.splits.begin(), what.splits.end());
    auto set = std::make_unique<ProcessSet>(id, std::move(ranks), comm_, options_.cache_capacity);
    {
      std::lock_guard<std::mutex> lock(mu_);
      sets_[id] = std::move(set);
    }
    result.data.resize(sizeof(int32_t));
    const int32_t id32 = id;
    std::memcpy(result.data.data(), &id32, sizeof id32);
  } else if (what.root == kGlobalProcessSet || sets_.count(what.root) == 0) {
    s = Status::InvalidArgument("remove process set: process set " + std::to_string(what.root) +
                                (what.root == kGlobalProcessSet
                                     ? " (the whole job) cannot be removed"
                                     : " does not exist"));
  } else {
    FailSet(what.root, Status::InvalidArgument("process set " + std::to_string(what.root) +
                                               " was removed while this operation waited"));
    std::lock_guard<std::mutex> lock(mu_);
    sets_.erase(what.root);
  }
  if (r.handle != 0) handles_.Complete(r.handle, s, std::move(result));
  return Status::OK();
}

void Engine::Fail(const Status& status) {
  std::vector<int64_t> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failure_ = status;
    stopped_ = true;
    for (const auto& [key, r] : in_flight_) pending.push_back(r.handle);
    in_flight_.clear();
    for (auto& [id, set] : sets_) set->queue.clear();
  }
  for (int64_t h : pending) handles_.Complete(h, status);
}

}  // namespace cohort
