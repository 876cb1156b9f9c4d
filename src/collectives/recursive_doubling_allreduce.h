// Latency-optimal allreduce for small messages over links.
#ifndef COHORT_COLLECTIVES_RECURSIVE_DOUBLING_ALLREDUCE_H_
#define COHORT_COLLECTIVES_RECURSIVE_DOUBLING_ALLREDUCE_H_

#include "collectives/call_header.h"
#include "collectives/communicator.h"

namespace cohort {

// In place on `buf`, which already holds this rank's (pre-scaled) input.
Status RecursiveDoublingAllreduce(Communicator& comm, void* buf, size_t count, DataType type,
                                  ReduceOp op, double postscale, const CallHeader& header);

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_RECURSIVE_DOUBLING_ALLREDUCE_H_
