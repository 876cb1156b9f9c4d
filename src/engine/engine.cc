// The engine's life and queue: start, submission, shutdown, abort and failure.
// The loop itself is in engine_cycle.cc, the executors in engine_<kind>.cc.
#include "engine/engine.h"

#include "common/logging.h"
#include "engine/request_checks.h"

namespace cohort {

Engine::Engine(Communicator& comm, EngineOptions options, GpuProvider* gpu)
    : comm_(comm), options_(options), leaving_(comm.size(), false), gpu_(gpu) {
  sets_[kGlobalProcessSet] = std::make_unique<ProcessSet>(kGlobalProcessSet, JobRanks(comm.size()),
                                                          comm, options.cache_capacity);
  if (!options_.timeline_path.empty()) {
    Status s = StartTimeline(options_.timeline_path);
    if (!s.ok()) {
      COHORT_LOG(kWarning) << "COHORT_TIMELINE: " << s.message();
    }
  }
  StartAutotune();
  thread_ = std::thread([this] { Loop(); });
}

Engine::~Engine() { Shutdown(); }

Result<int64_t> Engine::Enqueue(Request request, CompletionCallback callback) {
  const Announcement& a = request.what;
  // Errors name the request; the description is built only for them.
  if (Status s = CheckRequest(request); !s.ok()) {
    return a.name.empty() ? s : s.WithContext(DescribeRequest(request));
  }
  // Before the lock: the first GPU tensor loads the GPU stack.
  if (Status s = gpu_.Admit(&request); !s.ok()) return s;
  // A request refused below gives its GPU event back.
  struct Refused {
    GpuTensors& gpu;
    const Request* request;
    ~Refused() {
      if (request != nullptr) gpu.Drop(*request);
    }
  } refused{gpu_, &request};
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.ok()) return failure_;
  if (!stopped_by_.empty()) {
    return Status::NotInitialized(DescribeRequest(request) + ": cohort was shut down by " +
                                  stopped_by_ + "; call init() to start again");
  }
  if (stopped_ || shutdown_requested_) {
    return Status::NotInitialized(DescribeRequest(request) + ": the engine is shutting down");
  }
  auto set = sets_.find(request.process_set);
  if (set == sets_.end()) {
    return Status::InvalidArgument(DescribeRequest(request) + ": " +
                                   NoSuchProcessSet(request.process_set).message());
  }
  if (!set->second->member()) {
    return Status::InvalidArgument(
        DescribeRequest(request) + ": rank " + std::to_string(comm_.rank()) +
        " is not a member of process set " + std::to_string(request.process_set));
  }
  if (Status s = CheckSplits(a, set->second->size()); !s.ok()) {
    return s.WithContext(DescribeRequest(request));
  }
  const auto key = std::make_pair(request.process_set, a.name);
  if (in_flight_.count(key) > 0) {
    return Status::InvalidArgument(DescribeRequest(request) + ": a tensor named '" + a.name +
                                   "' is already in flight on rank " +
                                   std::to_string(comm_.rank()) +
                                   "; wait for it before submitting the name again");
  }
  const int64_t handle = handles_.Create(std::move(callback));
  request.handle = handle;
  in_flight_[key] = request;
  refused.request = nullptr;
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

bool Engine::Stopped() {
  std::lock_guard<std::mutex> lock(mu_);
  return stopped_;
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

Request Engine::TakePending(int set, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_flight_.find({set, name});
  if (it == in_flight_.end()) return Request{};
  Request r = std::move(it->second);
  in_flight_.erase(it);
  return r;
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
