// The checks a request passes on its own rank before it is queued: the ones
// that need no other rank (those are negotiation's, engine/negotiation.h).
#ifndef COHORT_ENGINE_REQUEST_CHECKS_H_
#define COHORT_ENGINE_REQUEST_CHECKS_H_

#include <string>

#include "cohort/status.h"
#include "engine/request.h"

namespace cohort {

// "allreduce of tensor 'w' in process set 2": how errors name the request.
std::string DescribeRequest(const Request& request);

// Name, dtype, op and compression values, shape, buffers, and whether the
// kind may run in the request's process set. Errors do not name the request
// (the caller adds DescribeRequest only when there is one: the check runs on
// every submission).
Status CheckRequest(const Request& request);

// The rows-per-rank argument of reduce-scatter and alltoall against the
// size of the set the request runs in.
Status CheckSplits(const Announcement& a, int size);

}  // namespace cohort

#endif  // COHORT_ENGINE_REQUEST_CHECKS_H_
