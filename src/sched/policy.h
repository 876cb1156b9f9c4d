// The queue's policy: one pure function from the queue's state to what to do
// now (which gangs to start where, which running jobs to SIGTERM) and why
// every other job waits. No I/O and no clock: `now` is part of the state, so
// the server and the simulator (sched/simulator.h) run the same code.
//
// kCohort orders each priority class (high, normal, low) by fair share
// between users and projects, puts jobs within their project's quota before
// jobs that would borrow idle capacity, reserves the earliest possible start
// for the first job that does not fit (the head) and backfills other jobs
// only where they do not delay that reservation. A head that is entitled to
// capacity (its project is under quota, or it outranks running jobs) gets it
// back by preempting borrowed or lower-priority jobs, youngest first.
// kFifo and kStrictPriority are the baselines: submission order, or priority
// then submission order, each stopping at the first job that does not fit.
#ifndef COHORT_SCHED_POLICY_H_
#define COHORT_SCHED_POLICY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sched/fair_share.h"
#include "sched/job.h"

namespace cohort::sched {

enum class PolicyKind { kCohort, kFifo, kStrictPriority };

// The registry of policies: the one place that names each. `cohort server
// --policy` and `cohort sched simulate --policy` take their choices from it;
// a new policy is a row here and its branch in Schedule (policy.cc).
struct PolicyEntry {
  PolicyKind kind;
  const char* name;
};
inline constexpr PolicyEntry kPolicies[] = {
    {PolicyKind::kCohort, "cohort"},
    {PolicyKind::kFifo, "fifo"},
    {PolicyKind::kStrictPriority, "strict-priority"},
};

// "cohort", "fifo", "strict-priority".
const char* PolicyName(PolicyKind kind);
// The policy named `name`; else kInvalidArgument "unknown policy 'NAME'
// (expected cohort, fifo or strict-priority)".
Result<PolicyKind> ParsePolicyName(const std::string& name);
// "cohort, fifo or strict-priority".
std::string PolicyList();

struct PolicyConfig {
  PolicyKind kind = PolicyKind::kCohort;
  // Seconds between SIGTERM and SIGKILL for a preempted job (its checkpoint).
  double grace_s = 60;
  // Reservation length of a job that gave no max_time.
  double default_max_time = 24 * 3600;
  // Fair-share accounting charges each queued job slots x min(max_time,
  // charge_cap_s) when ordering, so one user's many jobs interleave with others'.
  double charge_cap_s = 3600;
  // Estimated starts are computed for this many jobs at the front of the queue
  // (each costs a walk over the availability profile); later jobs get -1.
  int estimate_depth = 100;
};

// Schedule takes any state, consistent or not, and reads only within its
// vectors. Where a state says the impossible (the queue's agent that came
// back reporting fewer slots than its running jobs hold), the pass reads it
// so: a running job's placement entry on a host `hosts` does not have (an
// index outside it) or of no slots holds nothing; a host of negative slots
// has none; and a host whose running jobs hold more than its slots is
// oversubscribed: none of its slots are free, nor reserved, until enough of
// those jobs have ended to pay off the excess.
struct QueueState {
  double now = 0;
  std::vector<Host> hosts;
  std::vector<JobSpec> pending;  // any order
  std::vector<RunningJob> running;
  // Slots guaranteed to each project. Empty: no quotas. Otherwise a project
  // that is absent has a quota of 0 (it runs only on borrowed capacity).
  std::map<std::string, int> quota;
  Usage usage;
  Shares shares;
};

struct StartDecision {
  uint64_t job = 0;
  std::vector<Placement> placement;
  bool borrowed = false;    // beyond its project's quota: reclaimable
  bool backfilled = false;  // started ahead of the reserved head job
};

struct PreemptDecision {
  uint64_t job = 0;    // a running job to SIGTERM, then requeue
  double grace_s = 0;  // seconds before SIGKILL
  std::string reason;
};

struct PendingStatus {
  uint64_t job = 0;
  int position = 0;  // 1-based place in the queue's order
  std::string reason;
  double estimated_start = -1;  // on the state's clock; -1: not estimated
};

struct Decision {
  std::vector<StartDecision> starts;
  std::vector<PreemptDecision> preemptions;
  std::vector<PendingStatus> pending;  // the jobs left waiting, in queue order
};

// One scheduling pass.
Decision Schedule(const QueueState& state, const PolicyConfig& config);

// The order in which `kind` considers state.pending: indices into it.
std::vector<size_t> QueueOrder(const QueueState& state, const PolicyConfig& config);

}  // namespace cohort::sched

#endif  // COHORT_SCHED_POLICY_H_
