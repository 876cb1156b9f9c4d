// ProcessSet: a subset of the job's ranks that negotiates and runs its
// collectives on its own: its own communicator (a view over the job's links),
// negotiation table and response cache. Set 0 is the whole job.
//
// Every rank holds every set (members and non-members alike), created and
// removed between the same two engine cycles everywhere, so set ids agree.
#ifndef COHORT_ENGINE_PROCESS_SET_H_
#define COHORT_ENGINE_PROCESS_SET_H_

#include <memory>
#include <vector>

#include "collectives/communicator.h"
#include "common/deadline.h"
#include "engine/negotiation.h"
#include "engine/request.h"
#include "engine/response_cache.h"

namespace cohort {

struct ProcessSet {
  // `job`: the job's communicator; `ranks`: job ranks, ascending. Set 0 runs
  // on `job` itself, other sets this rank belongs to on a sub-communicator.
  ProcessSet(int id, std::vector<int> ranks, Communicator& job, size_t cache_capacity);

  bool member() const { return comm != nullptr; }
  int size() const { return static_cast<int>(ranks.size()); }

  const int id;
  const std::vector<int> ranks;
  std::unique_ptr<Communicator> sub;    // owned sub-communicator (member, set other than 0)
  Communicator* comm = nullptr;         // null where this rank is not a member
  NegotiationTable table;               // engine thread only
  ResponseCache cache;                  // engine thread only
  Clock::time_point next_stall_report;  // the set's first rank, engine thread only
  std::vector<Request> queue;           // guarded by Engine::mu_: submitted, not yet announced
};

// Every rank of a job of `size` ranks, ascending: the members of set 0.
std::vector<int> JobRanks(int size);

// The error of every lookup of a set id that is not (or no longer) there.
Status NoSuchProcessSet(int id);

}  // namespace cohort

#endif  // COHORT_ENGINE_PROCESS_SET_H_
