// Agreeing on the outcome of a step every rank took on its own (mapping the
// peers' buffers, joining NCCL): each rank's OK or error is gathered from
// every rank, so all decide alike (go on, fall back, or fail with the same
// message naming the first rank that failed).
#ifndef COHORT_GPU_TRANSPORT_OUTCOMES_H_
#define COHORT_GPU_TRANSPORT_OUTCOMES_H_

#include <string>
#include <vector>

#include "collectives/communicator.h"

namespace cohort::gpu {

// Every rank's error message ("" for OK), by rank; messages are cut to 500
// bytes. Fails only when the exchange itself fails.
Result<std::vector<std::string>> GatherOutcomes(Communicator& comm, const Status& mine);

// The first rank with an error, or -1.
int FirstFailedRank(const std::vector<std::string>& outcomes);

}  // namespace cohort::gpu

#endif  // COHORT_GPU_TRANSPORT_OUTCOMES_H_
