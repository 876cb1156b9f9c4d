// The engine's cycle: collect the queued requests, announce them (full or as
// response-cache bits), exchange and expand every rank's message, apply them
// to the negotiation table and execute the agreed responses.
#include "engine/engine.h"

#include <algorithm>
#include <utility>

#include "collectives/collectives.h"
#include "common/logging.h"

namespace cohort {

Status Engine::Cycle() {
  std::map<int, std::vector<Request>> queued;
  bool shutdown = false;
  {
    // No fixed sleep: a submission wakes the loop at once; the cycle time
    // only bounds how long an idle rank waits before joining the next round.
    // A rank whose announcements wait for other ranks does not idle: they
    // announce the same tensors within moments (their submission loops are
    // behind this one's), and a round needs every rank, so idling here would
    // hold the step back a whole cycle time (issue 11 item 17).
    std::unique_lock<std::mutex> lock(mu_);
    auto has_work = [&] {
      for (const auto& [id, set] : sets_) {
        if (!set->queue.empty()) return true;
      }
      return shutdown_requested_;
    };
    if (!std::exchange(rejoin_at_once_, false)) {
      wake_.wait_for(lock, std::chrono::duration<double, std::milli>(tuned_.cycle_time_ms),
                     has_work);
    }
    for (auto& [id, set] : sets_) {
      if (!set->queue.empty()) queued[id] = std::exchange(set->queue, {});
    }
    shutdown = shutdown_requested_;
  }
  if (!queued.empty()) last_progress_ = Clock::now();
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
    const int first =
        static_cast<int>(std::find(leaving_.begin(), leaving_.end(), true) - leaving_.begin());
    const std::string who = comm_.mesh().Describe(first);
    {
      // Stopped before any handle fails: a thread woken by that failure
      // must find the engine stopped (IsRunning, Enqueue).
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
      if (!shutdown_requested_) stopped_by_ = who;
    }
    FailUnfinished(who);
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
  if (set.id == kGlobalProcessSet) {
    mine.stuck = StuckWaits();
    mine.tuning = std::exchange(tuning_to_send_, std::nullopt);
  }
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
  if (set.id == kGlobalProcessSet) {
    COHORT_RETURN_IF_ERROR(FindDeadlock(all));
    ++rounds_;
    // Rank 0's autotuning order takes effect here on every rank, before this
    // round's responses are formed and run (fusion, algorithm choice).
    if (all[0].tuning) ApplyTuning(*all[0].tuning);
  }
  std::vector<std::vector<Announcement>> per_rank;
  bool any_shutdown = false;
  for (size_t r = 0; r < all.size(); ++r) {
    per_rank.push_back(std::move(all[r].announcements));
    any_shutdown = any_shutdown || all[r].shutdown;
    if (all[r].shutdown) leaving_[set.ranks[r]] = true;  // only set 0 carries the flag
  }
  set.table.Apply(per_rank);
  // Only after a cycle that announced something: ranks that announced
  // different tensors must not keep each other cycling.
  for (const Request& r : queued) {
    if (set.table.IsWaiting(r.what.name)) rejoin_at_once_ = true;
  }
  // Where ranks share memory, fused tensors are reduced in place from their
  // own buffers (no copies), so tensors of any size fuse; elsewhere large ones
  // run alone rather than pay for copies through the fusion buffer.
  const uint64_t max_fused = CanAllreducePieces(*set.comm) ? tuned_.fusion_threshold_bytes
                                                           : options_.fusion_max_tensor_bytes;
  const std::vector<Response> responses =
      set.table.TakeResponses(tuned_.fusion_threshold_bytes, max_fused);
  if (!responses.empty()) {
    cycles_.fetch_add(1, std::memory_order_relaxed);
    last_progress_ = Clock::now();
  }
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
    if (autotuner_ && set.id == kGlobalProcessSet) ObserveForAutotune(response);
  }
  if (stop != nullptr) *stop = any_shutdown;
  return Status::OK();
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

void Engine::FailUnfinished(const std::string& who) {
  // The engine stops on every rank in this cycle: what is still unmatched
  // never will be. Names some leaving rank never sent say so; the rest fail
  // naming the rank whose shutdown ended the job.
  for (auto& [id, set] : sets_) {
    if (set->member()) FailAbandoned(*set);
  }
  FailSet(-1, Status::NotInitialized("the engine shut down (" + who +
                                     " called shutdown) before this operation ran"));
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

}  // namespace cohort
