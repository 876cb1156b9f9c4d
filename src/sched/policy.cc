// One scheduling pass (see policy.h): order, start what fits, reserve for the
// head, backfill around the reservation, preempt for an entitled head, and
// say why every other job waits.
#include "sched/policy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <queue>

#include "common/word_list.h"
#include "sched/availability_profile.h"
#include "sched/gang_placement.h"

namespace cohort::sched {

namespace {

constexpr double kNever = HUGE_VAL;

// "12 s" (whole seconds; integer formatting: a pass formats thousands of these).
std::string Seconds(double s) {
  return std::to_string(std::llround(std::min(std::max(0.0, s), 9e18))) + " s";
}

double MaxTime(const JobSpec& job, const PolicyConfig& config) {
  return job.max_time > 0 ? job.max_time : config.default_max_time;
}

bool SubmittedBefore(const JobSpec& a, const JobSpec& b) {
  return a.submitted != b.submitted ? a.submitted < b.submitted : a.id < b.id;
}

std::map<std::string, int> SlotsPerProject(const std::vector<RunningJob>& running) {
  std::map<std::string, int> used;
  for (const RunningJob& job : running) used[job.spec.project] += job.spec.slots;
  return used;
}

int Quota(const QueueState& state, const std::string& project) {
  auto it = state.quota.find(project);
  return it == state.quota.end() ? 0 : it->second;
}

// kCohort's order within one priority class: the user (and project) with the
// lowest fair-share score goes next, each user's jobs in submission order,
// each pick charged to its user and project. Then jobs within their
// project's quota move ahead of jobs that would borrow.
void OrderClass(const QueueState& state, const PolicyConfig& config, std::vector<size_t> jobs,
                std::map<std::string, int>* quota_used, std::vector<size_t>* order) {
  std::map<std::string, std::vector<size_t>> per_user;
  for (size_t i : jobs) per_user[state.pending[i].user].push_back(i);
  // Users by index in name order, so heap ties go by name without comparing strings.
  std::vector<std::vector<size_t>*> lists;
  for (auto& [user, list] : per_user) {
    std::sort(list.begin(), list.end(), [&](size_t a, size_t b) {
      return SubmittedBefore(state.pending[a], state.pending[b]);
    });
    lists.push_back(&list);
  }
  std::vector<size_t> next(lists.size(), 0);
  Usage charged = state.usage;
  using Entry = std::pair<double, size_t>;  // score, user index
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  auto push = [&](size_t u) {
    const JobSpec& job = state.pending[(*lists[u])[next[u]]];
    heap.push({FairShareScore(charged, state.shares, job.user, job.project), u});
  };
  for (size_t u = 0; u < lists.size(); ++u) push(u);
  std::vector<size_t> within, borrowing;
  while (!heap.empty()) {
    const size_t u = heap.top().second;
    heap.pop();
    const std::vector<size_t>& list = *lists[u];
    size_t& k = next[u];
    const JobSpec& job = state.pending[list[k]];
    int& used = (*quota_used)[job.project];
    bool in_quota = state.quota.empty() || used + job.slots <= Quota(state, job.project);
    if (in_quota) used += job.slots;
    (in_quota ? within : borrowing).push_back(list[k]);
    double charge = job.slots * std::min(MaxTime(job, config), config.charge_cap_s);
    charged.user[job.user] += charge;
    charged.project[job.project] += charge;
    if (++k < list.size()) push(u);
  }
  order->insert(order->end(), within.begin(), within.end());
  order->insert(order->end(), borrowing.begin(), borrowing.end());
}

}  // namespace

const char* PolicyName(PolicyKind kind) {
  for (const PolicyEntry& e : kPolicies) {
    if (e.kind == kind) return e.name;
  }
  return "unknown";
}

Result<PolicyKind> ParsePolicyName(const std::string& name) {
  for (const PolicyEntry& e : kPolicies) {
    if (name == e.name) return e.kind;
  }
  return Status::InvalidArgument("unknown policy '" + name + "' (expected " + PolicyList() + ")");
}

std::string PolicyList() {
  std::vector<std::string> names;
  for (const PolicyEntry& e : kPolicies) names.push_back(e.name);
  return JoinWithOr(names);
}

std::vector<size_t> QueueOrder(const QueueState& state, const PolicyConfig& config) {
  std::vector<size_t> order(state.pending.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto& pending = state.pending;
  if (config.kind == PolicyKind::kFifo) {
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return SubmittedBefore(pending[a], pending[b]); });
    return order;
  }
  if (config.kind == PolicyKind::kStrictPriority) {
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (pending[a].priority != pending[b].priority) {
        return pending[a].priority > pending[b].priority;
      }
      return SubmittedBefore(pending[a], pending[b]);
    });
    return order;
  }
  std::vector<size_t> by_class[3];
  for (size_t i = 0; i < pending.size(); ++i) {
    by_class[static_cast<int>(pending[i].priority)].push_back(i);
  }
  std::map<std::string, int> quota_used = SlotsPerProject(state.running);
  order.clear();
  for (int c = 2; c >= 0; --c) {
    if (!by_class[c].empty()) OrderClass(state, config, by_class[c], &quota_used, &order);
  }
  return order;
}

namespace {

// The state of one pass while it walks the queue.
class Pass {
 public:
  Pass(const QueueState& state, const PolicyConfig& config)
      : state_(state), config_(config), used_(SlotsPerProject(state.running)) {
    free_.resize(state.hosts.size());
    for (size_t h = 0; h < state.hosts.size(); ++h) {
      free_[h] = std::max(0, state.hosts[h].slots);
      pool_slots_ += free_[h];
    }
    held_.reserve(state.running.size());
    for (const RunningJob& job : state.running) {
      held_.push_back(OnThisPool(job.placement));
      ApplyPlacement(held_.back(), -1, &free_);
    }
    for (int f : free_) free_total_ += std::max(f, 0);
  }

  Decision Run() {
    std::vector<size_t> order = QueueOrder(state_, config_);
    for (size_t i : order) Consider(state_.pending[i]);
    EstimateStarts();
    for (size_t k = 0; k < decision_.pending.size(); ++k) decision_.pending[k].position = k + 1;
    return std::move(decision_);
  }

 private:
  // The entries of a running job's placement that hold slots of state.hosts.
  std::vector<Placement> OnThisPool(const std::vector<Placement>& placement) const {
    std::vector<Placement> held;
    for (const Placement& p : placement) {
      if (p.host >= 0 && static_cast<size_t>(p.host) < free_.size() && p.slots > 0) {
        held.push_back(p);
      }
    }
    return held;
  }

  bool Borrows(const JobSpec& job) const {
    if (state_.quota.empty()) return false;
    auto it = used_.find(job.project);
    int used = it == used_.end() ? 0 : it->second;
    return used + job.slots > Quota(state_, job.project);
  }

  std::string QuotaNote(const JobSpec& job) const {
    if (!Borrows(job)) return "";
    return "; project " + job.project + " is beyond its quota of " +
           std::to_string(Quota(state_, job.project)) +
           " slots, so this job runs only on idle capacity";
  }

  void Wait(const JobSpec& job, std::string reason) {
    PendingStatus status;
    status.job = job.id;
    status.reason = std::move(reason) + QuotaNote(job);
    decision_.pending.push_back(std::move(status));
    waiting_.push_back(&job);
  }

  void Start(const JobSpec& job, std::vector<Placement> placement, bool backfilled) {
    StartDecision start;
    start.job = job.id;
    start.borrowed = Borrows(job);
    start.backfilled = backfilled;
    ApplyPlacement(placement, -1, &free_);
    free_total_ -= job.slots;
    used_[job.project] += job.slots;
    started_.push_back({job, state_.now + MaxTime(job, config_), placement});
    start.placement = std::move(placement);
    decision_.starts.push_back(std::move(start));
  }

  void Consider(const JobSpec& job) {
    if (job.slots <= 0) {
      return Wait(job, "asks for " + std::to_string(job.slots) + " slots; a job needs at least 1");
    }
    if (job.slots > pool_slots_) {
      return Wait(job, "needs " + std::to_string(job.slots) + " slots; the pool has only " +
                           std::to_string(pool_slots_));
    }
    if (head_ == nullptr) {
      if (auto placement = PlaceGang(free_, job.slots)) {
        return Start(job, std::move(*placement), false);
      }
      return BecomeHead(job);
    }
    if (config_.kind != PolicyKind::kCohort) {
      return Wait(job, "behind job " + head_id_ + ", which waits for " +
                           std::to_string(head_->slots) + " slots (" + PolicyName(config_.kind) +
                           " does not backfill)");
    }
    Backfill(job);
  }

  // The first job that does not fit: reserve its earliest start, preempting
  // for it when it is entitled to capacity others hold.
  void BecomeHead(const JobSpec& job) {
    head_ = &job;
    head_id_ = std::to_string(job.id);
    ReserveForHead(job);
    // Preempt only when waiting for running jobs to end takes longer than
    // the victims' grace period would.
    std::string preempted;
    if (config_.kind == PolicyKind::kCohort && shadow_ - state_.now > config_.grace_s) {
      preempted = Preempt(job);
      if (!preempted.empty()) ReserveForHead(job);
    }
    delay_prefix_ = "would delay job " + head_id_ + ", reserved to start in " +
                    Seconds(shadow_ - state_.now) + ": this job may run ";
    std::string reason = "first in line: needs " + std::to_string(job.slots) + " slots, " +
                         std::to_string(free_total_) + " free";
    if (!preempted.empty()) {
      reason += "; preempting " + preempted;
    } else if (shadow_ < kNever) {
      reason +=
          "; slots reserved from when running jobs end (in " + Seconds(shadow_ - state_.now) + ")";
    }
    Wait(job, reason);
  }

  bool Outranks(const JobSpec& job, const RunningJob& victim) const {
    if (victim.spec.priority < job.priority) return true;
    return !state_.quota.empty() && !Borrows(job) && victim.borrowed &&
           victim.spec.project != job.project && Quota(state_, job.project) > 0;
  }

  // Picks running jobs to SIGTERM so that `job` fits once they are gone:
  // lowest priority first, borrowed before guaranteed, youngest first (the
  // least work since their last checkpoint). Nothing when the jobs already
  // terminating free enough, or when all candidates together would not.
  std::string Preempt(const JobSpec& job) {
    int coming = free_total_;
    std::vector<const RunningJob*> candidates;
    for (const RunningJob& r : state_.running) {
      if (r.terminating) {
        coming += r.spec.slots;
      } else if (Outranks(job, r)) {
        candidates.push_back(&r);
      }
    }
    if (coming >= job.slots) return "";
    std::sort(candidates.begin(), candidates.end(), [](const RunningJob* a, const RunningJob* b) {
      if (a->spec.priority != b->spec.priority) return a->spec.priority < b->spec.priority;
      if (a->borrowed != b->borrowed) return a->borrowed;
      return a->started != b->started ? a->started > b->started : a->spec.id > b->spec.id;
    });
    size_t count = 0;
    while (count < candidates.size() && coming < job.slots)
      coming += candidates[count++]->spec.slots;
    if (coming < job.slots) return "";
    std::string names;
    for (size_t k = 0; k < count; ++k) {
      const RunningJob& victim = *candidates[k];
      PreemptDecision preempt;
      preempt.job = victim.spec.id;
      preempt.grace_s = config_.grace_s;
      preempt.reason = victim.spec.priority < job.priority
                           ? std::string("preempted for job ") + std::to_string(job.id) + " (" +
                                 PriorityName(job.priority) + " priority)"
                           : "project " + job.project + " reclaims its quota for job " +
                                 std::to_string(job.id) + " (this job borrowed beyond project " +
                                 victim.spec.project + "'s quota)";
      decision_.preemptions.push_back(std::move(preempt));
      victims_.push_back(victim.spec.id);
      names += (k ? ", " : "job ") + std::to_string(victim.spec.id);
    }
    return names + " (grace " + Seconds(config_.grace_s) + ")";
  }

  double ExpectedEnd(const RunningJob& job) const {
    if (job.terminating) {
      return std::max(state_.now, job.terminating_since + config_.grace_s);
    }
    if (std::find(victims_.begin(), victims_.end(), job.spec.id) != victims_.end()) {
      return state_.now + config_.grace_s;
    }
    return std::max(state_.now, job.started + MaxTime(job.spec, config_));
  }

  struct Release {
    double at;
    const std::vector<Placement>* placement;
  };

  // Running jobs and this pass's starts by expected end, with what they hold.
  std::vector<Release> Releases() const {
    std::vector<Release> releases;
    for (size_t i = 0; i < state_.running.size(); ++i) {
      releases.push_back({ExpectedEnd(state_.running[i]), &held_[i]});
    }
    for (const Started& s : started_) releases.push_back({s.end, &s.placement});
    std::sort(releases.begin(), releases.end(),
              [](const Release& a, const Release& b) { return a.at < b.at; });
    return releases;
  }

  // Walks running jobs by expected end until the head's gang fits: that time
  // is the reservation (shadow_); what a long backfill job may still use on
  // each host is what stays free at that time after the reservation.
  void ReserveForHead(const JobSpec& job) {
    std::vector<int> projected = free_;
    int usable = free_total_;  // the positive counts of `projected`: what PlaceGang places on
    shadow_ = kNever;
    long_cap_.assign(free_.size(), 0);
    long_total_ = 0;
    for (const Release& release : Releases()) {
      usable += ReleasePlacement(*release.placement, &projected);
      if (usable < job.slots) continue;
      std::optional<std::vector<Placement>> reserved = PlaceGang(projected, job.slots);
      if (!reserved) continue;  // never, while `usable` is counted right
      shadow_ = release.at;
      ApplyPlacement(*reserved, -1, &projected);
      for (size_t h = 0; h < free_.size(); ++h) {
        long_cap_[h] = std::max(0, std::min(free_[h], projected[h]));
        long_total_ += long_cap_[h];
      }
      return;
    }
  }

  // A job behind the head starts now only where it leaves the head's
  // reservation intact: anywhere if it ends by then, else only on slots the
  // reservation does not need.
  void Backfill(const JobSpec& job) {
    if (job.slots > free_total_) {
      return Wait(job, "waiting for " + std::to_string(job.slots) + " slots (" +
                           std::to_string(free_total_) + " free); behind job " + head_id_);
    }
    const double end = state_.now + MaxTime(job, config_);
    const bool ends_in_time = end <= shadow_;
    if (!ends_in_time && job.slots > long_total_) {
      return Wait(job, delay_prefix_ + Seconds(MaxTime(job, config_)) + " and only " +
                           std::to_string(long_total_) + " slots are free beyond then");
    }
    std::vector<Placement> placement = *PlaceGang(ends_in_time ? free_ : long_cap_, job.slots);
    for (const Placement& p : placement) {
      if (!ends_in_time) {
        long_cap_[p.host] -= p.slots;
        long_total_ -= p.slots;
      }
      int clipped = std::min(long_cap_[p.host], free_[p.host] - p.slots);
      long_total_ -= long_cap_[p.host] - clipped;
      long_cap_[p.host] = clipped;
    }
    Start(job, std::move(placement), true);
  }

  // Estimated starts of the first estimate_depth waiting jobs: each takes the
  // earliest time the free-slot profile holds its gang for its max_time, then
  // holds those slots (conservative backfilling over slot counts).
  void EstimateStarts() {
    int depth = std::min<int>(config_.estimate_depth, decision_.pending.size());
    if (depth <= 0) return;
    // Each end frees what it held, less what pays off an oversubscribed host.
    AvailabilityProfile profile(state_.now, free_total_);
    std::vector<int> projected = free_;
    for (const Release& release : Releases()) {
      int freed = ReleasePlacement(*release.placement, &projected);
      if (freed > 0) profile.Release(release.at, freed);
    }
    for (int k = 0; k < depth; ++k) {
      const JobSpec& job = *waiting_[k];
      if (job.slots <= 0 || job.slots > pool_slots_) continue;
      double duration = MaxTime(job, config_);
      double start = profile.EarliestStart(job.slots, duration);
      profile.Hold(start, duration, job.slots);
      decision_.pending[k].estimated_start = start;
    }
  }

  struct Started {
    JobSpec job;
    double end;
    std::vector<Placement> placement;
  };

  const QueueState& state_;
  const PolicyConfig& config_;
  std::map<std::string, int> used_;  // running slots per project, this pass's starts included
  std::vector<std::vector<Placement>> held_;  // state.running's placements on this pool
  // Free slots per host; negative on an oversubscribed host. free_total_ and
  // long_total_ are the sums of free_'s and long_cap_'s positive counts, so a
  // gang of up to that many slots always finds a PlaceGang placement.
  std::vector<int> free_;
  int free_total_ = 0;
  int pool_slots_ = 0;
  std::vector<Started> started_;
  std::vector<const JobSpec*> waiting_;  // parallel to decision_.pending
  std::vector<uint64_t> victims_;
  const JobSpec* head_ = nullptr;
  std::string head_id_;
  std::string delay_prefix_;  // the start of reasons of jobs that would delay the head
  double shadow_ = kNever;
  std::vector<int> long_cap_;
  int long_total_ = 0;
  Decision decision_;
};

}  // namespace

Decision Schedule(const QueueState& state, const PolicyConfig& config) {
  return Pass(state, config).Run();
}

}  // namespace cohort::sched
