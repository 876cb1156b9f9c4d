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

// Pieces of the blocks named by `block_per_step`, in step order. Because a
// ring step sends exactly the block received in the previous step, the send
// pieces of step t+1 line up one-to-one with the receive pieces of step t.
std::vector<Piece> ChunkSteps(const RingBlocks& blocks, const std::vector<int>& block_per_step,
                              size_t chunk_elems);
size_t PiecesInFirstStep(const RingBlocks& blocks, int first_block, size_t chunk_elems);

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_RING_PIECES_H_
