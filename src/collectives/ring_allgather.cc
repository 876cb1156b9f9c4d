// Ring allgather phase: at step t rank r sends block r-t to its right and
// receives block r-t-1 from its left straight into place; a received chunk is
// forwarded in the next step as soon as it has arrived.
#include <algorithm>
#include <vector>

#include "collectives/ring.h"
#include "collectives/ring_pieces.h"

namespace cohort {

Status RingAllgatherPhase(Communicator& comm, Transfers& transfers, void* buf,
                          const RingBlocks& blocks) {
  const int n = comm.size();
  const int r = comm.rank();
  if (n == 1) return Status::OK();
  const size_t esize = DataTypeSize(blocks.type);
  const size_t chunk = std::max<size_t>(1, comm.options().chunk_bytes / esize);
  std::vector<int> send_blocks, recv_blocks;
  for (int t = 0; t < n - 1; ++t) {
    send_blocks.push_back(((r - t) % n + n) % n);
    recv_blocks.push_back(((r - t - 1) % n + n) % n);
  }
  const std::vector<Piece> sends = ChunkSteps(blocks, send_blocks, chunk);
  const std::vector<Piece> recvs = ChunkSteps(blocks, recv_blocks, chunk);
  const size_t first = PiecesInFirstStep(blocks, send_blocks[0], chunk);
  auto* data = static_cast<unsigned char*>(buf);
  const int left = LeftOf(r, n), right = RightOf(r, n);
  const size_t recv_base = transfers.recvs_posted(left);

  for (const Piece& p : recvs) transfers.PostRecv(left, data + p.offset * esize, p.count * esize);
  size_t posted_sends = 0;
  while (posted_sends < sends.size()) {
    const size_t done = transfers.recvs_done(left);
    const size_t arrived = done > recv_base ? done - recv_base : 0;
    while (posted_sends < sends.size() && (posted_sends < first || posted_sends - first < arrived)) {
      const Piece& p = sends[posted_sends++];
      transfers.PostSend(right, data + p.offset * esize, p.count * esize);
    }
    if (posted_sends < sends.size()) COHORT_RETURN_IF_ERROR(transfers.Progress());
  }
  return transfers.WaitAll();
}

}  // namespace cohort
