// Block layout and chunking shared by the ring phases.
#include "collectives/ring.h"

#include "collectives/ring_pieces.h"

#include <algorithm>

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

namespace {

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

}  // namespace

RingMembers AllRanks(const Communicator& comm) {
  RingMembers ring;
  for (int r = 0; r < comm.size(); ++r) ring.ranks.push_back(r);
  ring.me = comm.rank();
  return ring;
}

RingSchedule MakeRingSchedule(const RingMembers& ring, const RingBlocks& blocks, int shift,
                              size_t chunk_bytes) {
  const int rank = ring.me, n = ring.size();
  RingSchedule s;
  s.esize = DataTypeSize(blocks.type);
  s.chunk_elems = std::max<size_t>(1, chunk_bytes / s.esize);
  s.left = ring.left();
  s.right = ring.right();
  std::vector<int> send_blocks, recv_blocks;
  for (int t = 0; t < n - 1; ++t) {
    send_blocks.push_back(((rank - t - shift) % n + n) % n);
    recv_blocks.push_back(((rank - t - shift - 1) % n + n) % n);
  }
  s.sends = ChunkSteps(blocks, send_blocks, s.chunk_elems);
  s.recvs = ChunkSteps(blocks, recv_blocks, s.chunk_elems);
  const size_t first_len = blocks.offsets[send_blocks[0] + 1] - blocks.offsets[send_blocks[0]];
  s.first_step_sends = (first_len + s.chunk_elems - 1) / s.chunk_elems;
  return s;
}

}  // namespace cohort
