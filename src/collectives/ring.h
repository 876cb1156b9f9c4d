// The two phases of ring algorithms over links, shared by allreduce,
// reduce-scatter and allgather. The buffer is cut into one block per rank
// (block b = elements [offsets[b], offsets[b+1])); each phase runs n-1 steps
// in which every rank sends one block to its right neighbour while receiving
// one from its left, pipelined in chunks so that a chunk is forwarded as soon
// as it has arrived (and been reduced).
#ifndef COHORT_COLLECTIVES_RING_H_
#define COHORT_COLLECTIVES_RING_H_

#include <cstddef>
#include <vector>

#include "cohort/types.h"
#include "collectives/transfers.h"

namespace cohort {

struct RingBlocks {
  std::vector<size_t> offsets;  // size n + 1, in elements
  DataType type;
};

// Near-equal blocks over `count` elements (the first count % n get one more).
RingBlocks EvenBlocks(size_t count, int n, DataType type);

// Afterwards rank r's block r of `buf` holds the reduction over all ranks of
// that block (not yet finished: see FinishReduction). Other blocks hold
// partial sums.
Status RingReduceScatterPhase(Communicator& comm, Transfers& transfers, void* buf,
                              const RingBlocks& blocks, ReduceOp op);

// Expects rank r's block r of `buf` to be final; afterwards every block is.
Status RingAllgatherPhase(Communicator& comm, Transfers& transfers, void* buf,
                          const RingBlocks& blocks);

inline int RightOf(int rank, int n) { return (rank + 1) % n; }
inline int LeftOf(int rank, int n) { return (rank + n - 1) % n; }

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_RING_H_
