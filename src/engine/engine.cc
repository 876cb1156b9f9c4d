// The engine loop: collect, negotiate, execute, complete.
#include "engine/engine.h"

#include <cstring>
#include <limits>
#include <sstream>
#include <utility>

#include "collectives/collectives.h"
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
  if (a.op == ReduceOp::kSum || a.op == ReduceOp::kAverage) return buf;  // zeros
  const double value = a.op == ReduceOp::kProduct ? 1.0
                       : a.op == ReduceOp::kMin   ? std::numeric_limits<double>::infinity()
                                                  : -std::numeric_limits<double>::infinity();
  unsigned char one[8];
  StoreAs(a.dtype, value, one);  // saturates to the type's extreme for integers
  for (size_t i = 0; i < a.elements(); ++i) std::memcpy(&buf[i * esize], one, esize);
  return buf;
}

// Rows rank r receives in a reduce-scatter.
std::vector<int64_t> ScatterRows(const Announcement& a, int size) {
  if (!a.splits.empty()) return a.splits;
  std::vector<int64_t> rows(size, a.shape[0] / size);
  for (int r = 0; r < a.shape[0] % size; ++r) ++rows[r];
  return rows;
}

}  // namespace

Engine::Engine(Communicator& comm, EngineOptions options)
    : comm_(comm),
      options_(options),
      table_(comm.size()),
      cache_(options.cache_capacity),
      next_stall_report_(Clock::now()) {
  if (!options_.timeline_path.empty()) {
    Status s = StartTimeline(options_.timeline_path);
    if (!s.ok()) COHORT_LOG(kWarning) << "COHORT_TIMELINE: " << s.message();
  }
  thread_ = std::thread([this] { Loop(); });
}

Status Engine::StartTimeline(const std::string& path) {
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
  const std::string what = std::string(RequestKindName(a.kind)) + " of tensor '" + a.name + "'";
  if (a.name.empty()) return Status::InvalidArgument("every tensor operation needs a name");
  if (request.process_set != kGlobalProcessSet) {
    return Status::InvalidArgument(what + ": process set " + std::to_string(request.process_set) +
                                   " does not exist");
  }
  if (!IsValidDataType(static_cast<int>(a.dtype)) || !IsValidReduceOp(static_cast<int>(a.op)) ||
      a.compression < 0 || a.compression > 2) {
    return Status::InvalidArgument(what + ": invalid data type, reduce op or compression value");
  }
  for (int64_t d : a.shape) {
    if (d < 0) return Status::InvalidArgument(what + ": negative dimension in its shape");
  }
  COHORT_RETURN_IF_ERROR(CheckSplits(a, comm_.size()).WithContext(what));
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
  if (in_flight_.count(a.name) > 0) {
    return Status::InvalidArgument(
        what + ": a tensor named '" + a.name + "' is already in flight on rank " +
        std::to_string(comm_.rank()) + "; wait for it before submitting the name again");
  }
  const int64_t handle = handles_.Create(std::move(callback));
  request.handle = handle;
  in_flight_[a.name] = request;
  queue_.push_back(std::move(request));  // `a` refers into `request`: unusable from here
  wake_.notify_one();
  return handle;
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

void Engine::Loop() {
  for (;;) {
    Status s = Cycle();
    if (!s.ok()) {
      Fail(s);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
  }
}

Status Engine::Cycle() {
  CycleMessage mine;
  {
    // No fixed sleep: a submission wakes the loop at once; the cycle time
    // only bounds how long an idle rank waits before joining the next round.
    std::unique_lock<std::mutex> lock(mu_);
    wake_.wait_for(lock, std::chrono::duration<double, std::milli>(options_.cycle_time_ms),
                   [&] { return !queue_.empty() || shutdown_requested_; });
    Announce(queue_, &mine);
    queue_.clear();
    mine.shutdown = shutdown_requested_;
  }
  {
    std::lock_guard<std::mutex> lock(timeline_mu_);
    tl_ = timeline_;
  }
  InspectStalls(&mine);
  if (tl_) {
    const Clock::time_point now = Clock::now();
    for (const Announcement& a : mine.announcements) {
      tl_->Begin(a.name, std::string("NEGOTIATE_") + RequestKindName(a.kind), now);
    }
  }
  std::vector<CycleMessage> all;
  COHORT_RETURN_IF_ERROR(Exchange(mine, &all));
  for (size_t r = 0; r < all.size(); ++r) {
    COHORT_RETURN_IF_ERROR(Expand(static_cast<int>(r), &all[r]));
  }
  if (tl_) {
    // When each rank's announcement of a tensor arrived here.
    const Clock::time_point now = Clock::now();
    for (size_t r = 0; r < all.size(); ++r) {
      for (const Announcement& a : all[r].announcements) {
        tl_->Instant(a.name, "rank " + std::to_string(r) + " ready", now);
      }
    }
  }
  // Rank 0 decided on stalls before this cycle's announcements; every rank
  // applies its decision first, so all tables stay identical.
  for (const std::string& name : all[0].stalled) FailStalled(name);
  std::vector<std::vector<Announcement>> per_rank;
  bool all_shutdown = true;
  for (CycleMessage& m : all) {
    per_rank.push_back(std::move(m.announcements));
    all_shutdown = all_shutdown && m.shutdown;
  }
  table_.Apply(per_rank);
  const std::vector<Response> responses =
      table_.TakeResponses(options_.fusion_threshold_bytes, options_.fusion_max_tensor_bytes);
  // Every rank caches the same successful announcements in the same order.
  for (const Response& response : responses) {
    if (!response.error.ok() || response.kind == RequestKind::kAllgather ||
        response.kind == RequestKind::kAlltoall || response.kind == RequestKind::kJoin) {
      continue;  // per-rank shapes or splits differ: nothing to share
    }
    for (const Announcement& a : response.what) cache_.Insert(a);
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
    COHORT_RETURN_IF_ERROR(Execute(response));
  }
  if (all_shutdown) {
    // Every rank has stopped submitting: what is still unmatched never will be.
    for (const auto& [name, missing] : table_.Waiting()) {
      Request r = TakePending(name);
      if (r.handle != 0) {
        handles_.Complete(r.handle,
                          Status::PeerFailure("tensor '" + name + "' was never submitted by " +
                                              DescribeRanks(missing) + " before they shut down"));
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  return Status::OK();
}

void Engine::Announce(const std::vector<Request>& queued, CycleMessage* mine) const {
  size_t hits = 0;
  for (const Request& r : queued) {
    const int slot = cache_.Find(r.what);
    if (slot < 0) {
      mine->announcements.push_back(r.what);
      continue;
    }
    if (mine->cached.empty()) mine->cached.assign((cache_.capacity() + 7) / 8, 0);
    mine->cached[slot / 8] |= static_cast<uint8_t>(1u << (slot % 8));
    ++hits;
  }
  if (hits > 0) {
    COHORT_LOG(kDebug) << "rank " << comm_.rank() << ": " << hits << " of " << queued.size()
                       << " announcements from the response cache";
  }
}

Status Engine::Expand(int rank, CycleMessage* message) const {
  for (size_t byte = 0; byte < message->cached.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      if (!(message->cached[byte] & (1u << bit))) continue;
      const Announcement* a = cache_.At(byte * 8 + bit);
      if (a == nullptr) {
        return comm_.Fail(Status::Internal("rank " + std::to_string(rank) +
                                           " announced empty response-cache slot " +
                                           std::to_string(byte * 8 + bit)));
      }
      message->announcements.push_back(*a);
    }
  }
  return Status::OK();
}

std::string Engine::DescribeRanks(const std::vector<int>& ranks) const {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + comm_.mesh().Describe(r);
  return out;
}

void Engine::InspectStalls(CycleMessage* mine) {
  if (comm_.rank() != 0) return;
  const Clock::time_point now = Clock::now();
  if (now >= next_stall_report_) {
    next_stall_report_ = now + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(options_.stall_check_seconds));
    for (const auto& [name, missing] :
         table_.WaitingLongerThan(std::chrono::duration<double>(options_.stall_check_seconds))) {
      COHORT_LOG(kWarning) << "stall inspector: tensor '" << name << "' has waited more than "
                           << options_.stall_check_seconds << " s (COHORT_STALL_CHECK_TIME); "
                           << "not yet submitted by " << DescribeRanks(missing);
    }
  }
  if (options_.stall_shutdown_seconds <= 0) return;
  for (const auto& [name, missing] :
       table_.WaitingLongerThan(std::chrono::duration<double>(options_.stall_shutdown_seconds))) {
    mine->stalled.push_back(name);
  }
}

void Engine::FailStalled(const std::string& name) {
  std::vector<int> missing;
  for (const auto& [waiting, ranks] : table_.Waiting()) {
    if (waiting == name) missing = ranks;
  }
  table_.Drop(name);
  Request r = TakePending(name);
  if (r.handle == 0) return;
  std::ostringstream message;
  message << "tensor '" << name << "' stalled: " << DescribeRanks(missing)
          << " did not submit it within " << options_.stall_shutdown_seconds
          << " s (COHORT_STALL_SHUTDOWN_TIME)";
  handles_.Complete(r.handle, Status::Timeout(message.str()));
}

Status Engine::Exchange(const CycleMessage& mine, std::vector<CycleMessage>* all) {
  const int n = comm_.size();
  const std::string message = EncodeCycleMessage(mine);
  std::vector<size_t> ones(n, 1), sizes(n);
  uint64_t my_size = message.size();
  std::vector<uint64_t> all_sizes(n);
  COHORT_RETURN_IF_ERROR(
      RunAllgather(comm_, &my_size, 1, all_sizes.data(), ones.data(), DataType::kInt64));
  size_t total = 0;
  for (int r = 0; r < n; ++r) total += sizes[r] = all_sizes[r];
  std::string bytes(total, '\0');
  COHORT_RETURN_IF_ERROR(RunAllgather(comm_, message.data(), message.size(), bytes.data(),
                                      sizes.data(), DataType::kUInt8));
  all->assign(n, {});
  size_t at = 0;
  for (int r = 0; r < n; ++r) {
    if (!DecodeCycleMessage(bytes.substr(at, sizes[r]), &(*all)[r])) {
      return comm_.Fail(
          Status::Internal("malformed negotiation message from rank " + std::to_string(r)));
    }
    at += sizes[r];
  }
  return Status::OK();
}

Request Engine::TakePending(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_flight_.find(name);
  if (it == in_flight_.end()) return Request{};
  Request r = std::move(it->second);
  in_flight_.erase(it);
  return r;
}

Status Engine::Execute(const Response& response) {
  if (!response.error.ok()) {
    // Arguments that disagree fail these names on every rank; the engine and
    // the other tensors carry on.
    for (const std::string& name : response.names) {
      if (tl_) {
        std::string args = "{\"error\":";
        AppendJsonString(&args, response.error.message());
        tl_->Instant(name, "ERROR", Clock::now(), args + "}");
      }
      Request r = TakePending(name);
      if (r.handle != 0) handles_.Complete(r.handle, response.error);
    }
    return Status::OK();
  }
  if (response.kind == RequestKind::kAllreduce) return ExecuteAllreduce(response);
  if (response.kind == RequestKind::kJoin) {
    Request r = TakePending(kJoinName);
    TensorResult result;
    result.last_joined_rank = response.last_joined_rank;
    if (r.handle != 0) handles_.Complete(r.handle, Status::OK(), std::move(result));
    return Status::OK();
  }
  Request r = TakePending(response.names[0]);
  if (response.kind == RequestKind::kAllgather) return ExecuteAllgather(r, response);
  if (response.kind == RequestKind::kReduceScatter) return ExecuteReduceScatter(r);
  if (response.kind == RequestKind::kAlltoall) return ExecuteAlltoall(r, response);
  const Announcement& a = r.what;
  const Clock::time_point start = Clock::now();
  Status s = response.kind == RequestKind::kBroadcast
                 ? RunBroadcast(comm_, r.recv, a.elements(), a.dtype, a.root)
                 : RunBarrier(comm_);
  if (tl_) tl_->Span(a.name, RequestKindName(a.kind), start, Clock::now());
  handles_.Complete(r.handle, s);
  return s;
}

Status Engine::ExecuteAllreduce(const Response& response) {
  std::vector<Request> reqs;
  std::vector<std::vector<unsigned char>>
      identity;  // buffers this rank takes part with after joining
  for (size_t i = 0; i < response.names.size(); ++i) {
    Request r = TakePending(response.names[i]);
    if (r.handle == 0) {  // joined: contribute the op's identity, discard the result
      r.what = response.what[i];
      identity.push_back(IdentityBuffer(r.what));
      r.send = r.recv = identity.back().data();
    }
    reqs.push_back(std::move(r));
  }
  const Announcement& a = reqs[0].what;
  Status s;
  if (reqs.size() == 1) {
    const Clock::time_point start = Clock::now();
    s = RunAllreduce(comm_, reqs[0].send, reqs[0].recv, a.elements(), a.dtype, a.op, a.prescale,
                     a.postscale, AllreduceAlgorithm::kAuto,
                     static_cast<Compression>(a.compression));
    if (tl_) tl_->Span(a.name, "ALLREDUCE", start, Clock::now());
  } else {
    const Clock::time_point t0 = Clock::now();
    const size_t esize = DataTypeSize(a.dtype);
    size_t total = 0;
    for (const Request& r : reqs) total += r.what.elements();
    unsigned char* buf = fusion_.Reserve(total * esize);
    size_t at = 0;
    for (const Request& r : reqs) {
      const size_t bytes = r.what.elements() * esize;
      if (bytes > 0) std::memcpy(buf + at, r.send, bytes);
      at += bytes;
    }
    const Clock::time_point t1 = Clock::now();
    s = RunAllreduce(comm_, buf, buf, total, a.dtype, a.op, a.prescale, a.postscale,
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

Status Engine::ExecuteAllgather(const Request& r, const Response& response) {
  const Announcement& a = r.what;
  const int n = comm_.size();
  const uint64_t row = a.row_elements();
  std::vector<size_t> counts(n);
  int64_t rows = 0;
  for (int p = 0; p < n; ++p) {
    counts[p] = static_cast<size_t>(response.rows_per_rank[p]) * row;
    rows += response.rows_per_rank[p];
  }
  std::vector<unsigned char> out(static_cast<size_t>(rows) * row * DataTypeSize(a.dtype));
  const Clock::time_point start = Clock::now();
  Status s = RunAllgather(comm_, r.send, counts[comm_.rank()], out.data(), counts.data(), a.dtype);
  if (tl_) tl_->Span(a.name, "ALLGATHER", start, Clock::now());
  TensorResult result;
  result.data = std::move(out);
  result.shape = a.shape.empty() ? std::vector<int64_t>{rows} : a.shape;
  result.shape[0] = rows;
  handles_.Complete(r.handle, s, std::move(result));
  return s;
}

Status Engine::ExecuteReduceScatter(const Request& r) {
  const Announcement& a = r.what;
  const int n = comm_.size();
  const std::vector<int64_t> rows = ScatterRows(a, n);
  std::vector<size_t> counts(n);
  for (int p = 0; p < n; ++p) counts[p] = static_cast<size_t>(rows[p]) * a.row_elements();
  TensorResult result;
  result.data.resize(counts[comm_.rank()] * DataTypeSize(a.dtype));
  result.shape = a.shape;
  result.shape[0] = rows[comm_.rank()];
  const Clock::time_point start = Clock::now();
  Status s = RunReduceScatter(comm_, r.send, result.data.data(), counts.data(), a.dtype, a.op);
  if (tl_) tl_->Span(a.name, "REDUCESCATTER", start, Clock::now());
  handles_.Complete(r.handle, s, std::move(result));
  return s;
}

Status Engine::ExecuteAlltoall(const Request& r, const Response& response) {
  const Announcement& a = r.what;
  const int n = comm_.size(), me = comm_.rank();
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
  Status s = RunAlltoall(comm_, r.send, send_counts.data(), result.data.data(), recv_counts.data(),
                         a.dtype);
  if (tl_) tl_->Span(a.name, "ALLTOALL", start, Clock::now());
  handles_.Complete(r.handle, s, std::move(result));
  return s;
}

void Engine::Fail(const Status& status) {
  std::vector<int64_t> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failure_ = status;
    stopped_ = true;
    for (const auto& [name, r] : in_flight_) pending.push_back(r.handle);
    in_flight_.clear();
    queue_.clear();
  }
  for (int64_t h : pending) handles_.Complete(h, status);
}

}  // namespace cohort
