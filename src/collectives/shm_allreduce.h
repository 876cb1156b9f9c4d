// Allreduce among ranks that all share one host, through their shared-memory
// slots (net/host_segment.h). See shm_allreduce.cc for the algorithm.
#ifndef COHORT_COLLECTIVES_SHM_ALLREDUCE_H_
#define COHORT_COLLECTIVES_SHM_ALLREDUCE_H_

#include <vector>

#include "collectives/call_header.h"
#include "collectives/communicator.h"

namespace cohort {

// One tensor of a multi-buffer allreduce: `count` elements from `send` into
// `recv` (which may equal `send`).
struct AllreducePiece {
  const void* send;
  void* recv;
  size_t count;
};

// Requires comm.mesh().all_local_shm(). `send` may equal `recv`.
Status ShmAllreduce(Communicator& comm, const void* send, void* recv, size_t count, DataType type,
                    ReduceOp op, double prescale, double postscale, const CallHeader& header);
// The pieces reduced as one message of their total count (the header's), in
// one pass with no copy into a common buffer.
Status ShmAllreduce(Communicator& comm, const std::vector<AllreducePiece>& pieces, DataType type,
                    ReduceOp op, double prescale, double postscale, const CallHeader& header);

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_SHM_ALLREDUCE_H_
