// Deadlock detection (engine/deadlock.h): each rank reports in set 0's
// message what its threads have been stuck waiting for, and every rank
// reaches the same verdict from the same reports in the same cycle.
#include <algorithm>
#include <sstream>

#include "engine/deadlock.h"
#include "engine/engine.h"

namespace cohort {

std::vector<StuckWait> Engine::StuckWaits() {
  if (options_.deadlock_seconds <= 0) return {};
  const auto patience = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options_.deadlock_seconds));
  const Clock::time_point now = Clock::now();
  if (now - last_progress_ < patience) return {};  // the common case: one clock read
  const std::vector<int64_t> waited = handles_.WaitedSince(now - patience);
  if (waited.empty()) return {};
  std::vector<StuckWait> stuck;
  std::lock_guard<std::mutex> lock(mu_);
  for (int64_t handle : waited) {
    auto found = std::find_if(in_flight_.begin(), in_flight_.end(),
                              [&](const auto& entry) { return entry.second.handle == handle; });
    // A wait on something else (a message, a join) may end without any
    // rank submitting more: this rank is not provably stuck.
    if (found == in_flight_.end()) return {};
    const auto& [key, request] = *found;
    auto set = sets_.find(key.first);
    if (set == sets_.end() || request.what.kind == RequestKind::kJoin) return {};
    StuckWait w;
    w.set = key.first;
    w.name = key.second;
    w.kind = request.what.kind;
    for (const auto& [name, missing] : set->second->table.Waiting()) {
      if (name != key.second) continue;
      for (int position : missing) w.missing.push_back(set->second->ranks[position]);
    }
    // Not in the table (still queued) or complete: it may run this cycle.
    if (w.missing.empty()) return {};
    stuck.push_back(std::move(w));
  }
  return stuck;
}

Status Engine::FindDeadlock(const std::vector<CycleMessage>& all) const {
  std::vector<std::vector<StuckWait>> stuck(all.size());
  bool any = false;
  for (size_t r = 0; r < all.size(); ++r) {
    stuck[r] = all[r].stuck;
    any = any || !stuck[r].empty();
  }
  if (!any) return Status::OK();
  const std::vector<int> ranks = DeadlockedRanks(stuck);
  if (ranks.empty()) return Status::OK();
  std::ostringstream message;
  message << "ranks diverged: no rank can go on (deadlock): "
          << DescribeDeadlock(stuck, ranks, [&](int r) { return comm_.mesh().Describe(r); })
          << "; nothing was submitted or completed for " << options_.deadlock_seconds
          << " s (COHORT_DEADLOCK_TIME). cohort stopped on every rank; init() starts it again";
  return Status::Mismatch(message.str());
}

}  // namespace cohort
