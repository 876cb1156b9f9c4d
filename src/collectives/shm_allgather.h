// Allgather among ranks that all share one host, through their
// shared-memory slots (net/host_segment.h). See shm_allgather.cc for the
// algorithm.
#ifndef COHORT_COLLECTIVES_SHM_ALLGATHER_H_
#define COHORT_COLLECTIVES_SHM_ALLGATHER_H_

#include <vector>

#include "collectives/call_header.h"
#include "collectives/communicator.h"

namespace cohort {

// `offsets` (size comm.size() + 1, in elements of `type`): rank p's block is
// [offsets[p], offsets[p+1]) of `recv`. This rank's block must already hold
// its input; every other block is filled with its owner's. Blocks may differ
// in size, and may be empty. Requires comm.mesh().all_local_shm().
Status ShmAllgather(Communicator& comm, void* recv, const std::vector<size_t>& offsets,
                    DataType type, const CallHeader& header);

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_SHM_ALLGATHER_H_
