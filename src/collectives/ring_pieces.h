// Internal to the ring phases: a block sequence cut into chunk-sized pieces.
#ifndef COHORT_COLLECTIVES_RING_PIECES_H_
#define COHORT_COLLECTIVES_RING_PIECES_H_

#include <cstddef>
#include <vector>

#include "collectives/ring.h"

namespace cohort {

struct Piece {
  size_t offset;  // elements
  size_t count;   // elements, > 0
};

// What one rank sends and receives over a ring phase of n-1 steps, in which
// member i's step t sends block (i - t - shift) and receives block
// (i - t - shift - 1); left and right are global ranks.
// Because a step sends exactly the block received in the previous step, send
// piece first_step_sends + k forwards receive piece k.
struct RingSchedule {
  std::vector<Piece> sends;
  std::vector<Piece> recvs;
  size_t first_step_sends = 0;
  int left = 0;
  int right = 0;
  size_t esize = 0;
  size_t chunk_elems = 0;
};

RingSchedule MakeRingSchedule(const RingMembers& ring, const RingBlocks& blocks, int shift,
                              size_t chunk_bytes);

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_RING_PIECES_H_
