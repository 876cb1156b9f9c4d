// The queue's vocabulary: hosts, jobs asking for a gang of slots, running jobs
// and where they were placed. Plain values shared by the policy, the
// simulator and (later) the server; nothing here does I/O or reads a clock.
#ifndef COHORT_SCHED_JOB_H_
#define COHORT_SCHED_JOB_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"

namespace cohort::sched {

// Priority classes, lowest first so that a larger value wins.
enum class PriorityClass : int { kLow = 0, kNormal = 1, kHigh = 2 };

// "low", "normal", "high".
const char* PriorityName(PriorityClass priority);
// The inverse of PriorityName; any other text is an error that quotes it.
Result<PriorityClass> ParsePriority(std::string_view text);

struct Host {
  std::string name;
  int slots = 0;
};

// A job as submitted. Times are seconds on the caller's clock.
struct JobSpec {
  uint64_t id = 0;
  std::string user;
  std::string project;
  int slots = 1;
  PriorityClass priority = PriorityClass::kNormal;
  double submitted = 0;
  // The run time the user allowed (--max-time); <= 0: unknown, the policy
  // assumes PolicyConfig::default_max_time for its reservations.
  double max_time = 0;
};

// `slots` slots on hosts[host].
struct Placement {
  int host = 0;
  int slots = 0;
};

struct RunningJob {
  JobSpec spec;
  double started = 0;
  std::vector<Placement> placement;
  // Started on capacity beyond its project's quota: the first to be reclaimed.
  bool borrowed = false;
  // SIGTERM was sent at `terminating_since`; the job is in its grace period.
  bool terminating = false;
  double terminating_since = 0;
};

}  // namespace cohort::sched

#endif  // COHORT_SCHED_JOB_H_
