// Allreduce and reduce-scatter among ranks that all share one host, through
// their shared-memory slots (net/host_segment.h). See shm_allreduce.cc for
// the algorithm.
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

// The part of a reduction's result one rank keeps: elements [begin, end),
// written to `recv`.
struct KeptRange {
  size_t begin;
  size_t end;
  void* recv;
};

// Reduce-scatter through the same slots: the op over ranks of `count`
// elements, of which this rank receives `keep` (its block; blocks may differ
// in size). Requires comm.mesh().all_local_shm(); `keep.recv` must not
// overlap `send`.
Status ShmReduceScatter(Communicator& comm, const void* send, size_t count, const KeptRange& keep,
                        DataType type, ReduceOp op, const CallHeader& header);

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_SHM_ALLREDUCE_H_
