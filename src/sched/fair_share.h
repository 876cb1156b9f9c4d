// Fair share: decayed usage per user and per project, the score that orders
// a priority class's jobs, and Jain's index to measure the outcome.
#ifndef COHORT_SCHED_FAIR_SHARE_H_
#define COHORT_SCHED_FAIR_SHARE_H_

#include <map>
#include <string>
#include <vector>

#include "sched/job.h"

namespace cohort::sched {

// Slot-seconds consumed, decayed: usage from `half_life` seconds ago counts half.
struct Usage {
  std::map<std::string, double> user;
  std::map<std::string, double> project;
};

// Moves `usage` forward by `elapsed` seconds during which `running` ran:
// the past decays by 0.5^(elapsed / half_life) and each running job adds
// slots x elapsed, decayed as if spread evenly over the interval.
void AdvanceUsage(const std::vector<RunningJob>& running, double elapsed, double half_life,
                  Usage* usage);

// Weights of users and projects; a name that is absent has weight 1.
struct Shares {
  std::map<std::string, double> user;
  std::map<std::string, double> project;
};

// Lower is served first: usage[user]/share[user] + usage[project]/share[project].
double FairShareScore(const Usage& usage, const Shares& shares, const std::string& user,
                      const std::string& project);

// Jain's fairness index of `x`: (sum x)^2 / (n sum x^2), 1 when all are equal,
// 1/n when one gets everything. 1 for an empty or all-zero input.
double JainIndex(const std::vector<double>& x);

}  // namespace cohort::sched

#endif  // COHORT_SCHED_FAIR_SHARE_H_
