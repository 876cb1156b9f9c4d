// ProcessSet construction.
#include "engine/process_set.h"

#include <algorithm>
#include <string>

namespace cohort {
namespace {

// Names for messages: a set's ranks by their job ranks (none needed for the whole job).
std::vector<int> RankNames(int id, const std::vector<int>& ranks) {
  return id == 0 ? std::vector<int>{} : ranks;
}

}  // namespace

ProcessSet::ProcessSet(int id, std::vector<int> members, Communicator& job, size_t cache_capacity)
    : id(id),
      ranks(std::move(members)),
      table(static_cast<int>(ranks.size()), RankNames(id, ranks)),
      cache(cache_capacity),
      next_stall_report(Clock::now()) {
  if (id == 0) {
    comm = &job;
  } else if (std::find(ranks.begin(), ranks.end(), job.rank()) != ranks.end()) {
    sub = std::make_unique<Communicator>(job, ranks);
    comm = sub.get();
  }
}

std::vector<int> JobRanks(int size) {
  std::vector<int> ranks(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) ranks[r] = r;
  return ranks;
}

Status NoSuchProcessSet(int id) {
  return Status::InvalidArgument("process set " + std::to_string(id) + " does not exist");
}

}  // namespace cohort
