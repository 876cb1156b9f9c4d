// Block layout and chunking shared by the ring phases.
#include "collectives/ring.h"

#include "collectives/ring_pieces.h"

namespace cohort {

RingBlocks EvenBlocks(size_t count, int n, DataType type) {
  RingBlocks blocks{std::vector<size_t>(n + 1, 0), type};
  const size_t base = count / n;
  const size_t extra = count % n;
  for (int b = 0; b < n; ++b) {
    blocks.offsets[b + 1] = blocks.offsets[b] + base + (static_cast<size_t>(b) < extra ? 1 : 0);
  }
  return blocks;
}

std::vector<Piece> ChunkSteps(const RingBlocks& blocks, const std::vector<int>& block_per_step,
                              size_t chunk_elems) {
  std::vector<Piece> pieces;
  for (int b : block_per_step) {
    for (size_t at = blocks.offsets[b]; at < blocks.offsets[b + 1]; at += chunk_elems) {
      pieces.push_back(Piece{at, std::min(chunk_elems, blocks.offsets[b + 1] - at)});
    }
  }
  return pieces;
}

size_t PiecesInFirstStep(const RingBlocks& blocks, int first_block, size_t chunk_elems) {
  const size_t len = blocks.offsets[first_block + 1] - blocks.offsets[first_block];
  return (len + chunk_elems - 1) / chunk_elems;
}

}  // namespace cohort
