// Deadlock among ranks: every rank of a group has a thread blocked on an
// operation that only ranks of the same group have not submitted, and none
// of them submitted or completed anything for COHORT_DEADLOCK_TIME. None of
// them can go on (their threads wait), so the engine stops the job with an
// error that says who waits for what, instead of letting it hang.
#ifndef COHORT_ENGINE_DEADLOCK_H_
#define COHORT_ENGINE_DEADLOCK_H_

#include <functional>
#include <string>
#include <vector>

#include "engine/request.h"

namespace cohort {

// The job ranks that are deadlocked, ascending (empty: none), from every job
// rank's report (`stuck[r]`: what rank r has been stuck waiting for; empty
// when it is not stuck). A rank is deadlocked when it is stuck and every rank
// its waits lack is deadlocked too (the largest such group): a rank that is
// not stuck may still submit what the others wait for.
std::vector<int> DeadlockedRanks(const std::vector<std::vector<StuckWait>>& stuck);

// "rank 0 (...) waits for allreduce 'x', which rank 1 has not submitted; ..."
// for the deadlocked `ranks`; `describe` names a job rank.
std::string DescribeDeadlock(const std::vector<std::vector<StuckWait>>& stuck,
                             const std::vector<int>& ranks,
                             const std::function<std::string(int)>& describe);

}  // namespace cohort

#endif  // COHORT_ENGINE_DEADLOCK_H_
