// Gathering every rank's outcome of a step (outcomes.h).
#include "gpu/transport/outcomes.h"

#include <cstring>

#include "collectives/collectives.h"

namespace cohort::gpu {
namespace {

struct Outcome {
  int32_t ok;
  char error[508];
};
static_assert(sizeof(Outcome) == 512);

}  // namespace

Result<std::vector<std::string>> GatherOutcomes(Communicator& comm, const Status& mine) {
  Outcome record;
  std::memset(&record, 0, sizeof(record));
  record.ok = mine.ok() ? 1 : 0;
  std::strncpy(record.error, mine.message().c_str(), sizeof(record.error) - 1);
  std::vector<Outcome> all(comm.size());
  std::vector<size_t> counts(comm.size(), sizeof(Outcome));
  COHORT_RETURN_IF_ERROR(
      RunAllgather(comm, &record, sizeof(record), all.data(), counts.data(), DataType::kUInt8));
  std::vector<std::string> outcomes;
  for (const Outcome& o : all) {
    outcomes.push_back(o.ok ? "" : std::string(o.error, strnlen(o.error, sizeof(o.error))));
  }
  return outcomes;
}

int FirstFailedRank(const std::vector<std::string>& outcomes) {
  for (size_t r = 0; r < outcomes.size(); ++r) {
    if (!outcomes[r].empty()) return static_cast<int>(r);
  }
  return -1;
}

}  // namespace cohort::gpu
