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

// The ranks a ring runs over, in ring order, and this rank's place in it:
// the whole communicator, or a subgroup such as the ranks of one host.
struct RingMembers {
  std::vector<int> ranks;
  int me = 0;  // index of this rank in `ranks`
  int size() const { return static_cast<int>(ranks.size()); }
  int right() const { return ranks[(me + 1) % size()]; }
  int left() const { return ranks[(me + size() - 1) % size()]; }
};

// Every rank of `comm`, in rank order.
RingMembers AllRanks(const Communicator& comm);

// Near-equal blocks over `count` elements (the first count % n get one more).
RingBlocks EvenBlocks(size_t count, int n, DataType type);

// `blocks` has one block per member. Afterwards member i's block i of `buf`
// holds the reduction over all members of that block (not yet finished: see
// FinishReduction). Other blocks hold partial sums.
Status RingReduceScatterPhase(Communicator& comm, Transfers& transfers, const RingMembers& ring,
                              void* buf, const RingBlocks& blocks, ReduceOp op);

// Expects member i's block i of `buf` to be final; afterwards every block is.
Status RingAllgatherPhase(Communicator& comm, Transfers& transfers, const RingMembers& ring,
                          void* buf, const RingBlocks& blocks);

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_RING_H_
