// Running an agreed response: failing mismatched names, and the executors
// for join, broadcast, barrier and process-set changes. Allreduce, allgather,
// reduce-scatter and alltoall have a file each (engine_<kind>.cc).
#include "engine/engine.h"

#include <cstring>

#include "collectives/collectives.h"

namespace cohort {

namespace {

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

}  // namespace

Status Engine::Execute(ProcessSet& set, const Response& response) {
  if (!response.error.ok()) {
    // Arguments that disagree fail these names on every rank; the engine and
    // the other tensors carry on.
    for (const std::string& name : response.names) {
      if (tl_) {
        tl_->Instant(name, "ERROR", Clock::now(),
                     TimelineArgs().Text("error", response.error.message()));
      }
      Request r = TakePending(set.id, name);
      gpu_.Drop(r);
      if (r.handle != 0) handles_.Complete(r.handle, response.error);
    }
    return Status::OK();
  }
  PhaseSpans phases(*set.comm, tl_.get(), response.names);
  if (response.what[0].on_device) return ExecuteOnDevice(set, response);
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

Status Engine::ExecuteProcessSetChange(const Request& r, const Announcement& what) {
  Status s;
  TensorResult result;
  if (what.kind == RequestKind::kAddProcessSet) {
    // Ranks were checked (in range, ascending, no repeats) where the call was made.
    const int id = next_set_id_++;
    std::vector<int> ranks(what.set_members.begin(), what.set_members.end());
    auto set = std::make_unique<ProcessSet>(id, std::move(ranks), comm_, options_.cache_capacity);
    {
      std::lock_guard<std::mutex> lock(mu_);
      sets_[id] = std::move(set);
    }
    result.data.resize(sizeof(int32_t));
    const int32_t id32 = id;
    std::memcpy(result.data.data(), &id32, sizeof id32);
  } else if (what.set_id == kGlobalProcessSet || sets_.count(what.set_id) == 0) {
    s = Status::InvalidArgument("remove process set: process set " + std::to_string(what.set_id) +
                                (what.set_id == kGlobalProcessSet
                                     ? " (the whole job) cannot be removed"
                                     : " does not exist"));
  } else {
    FailSet(what.set_id, Status::InvalidArgument("process set " + std::to_string(what.set_id) +
                                                 " was removed while this operation waited"));
    gpu_.RemoveSet(what.set_id);
    std::lock_guard<std::mutex> lock(mu_);
    sets_.erase(what.set_id);
  }
  if (r.handle != 0) handles_.Complete(r.handle, s, std::move(result));
  return Status::OK();
}

}  // namespace cohort
