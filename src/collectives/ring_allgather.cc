// Ring allgather phase: at step t member i sends block i-t to its right and
// receives block i-t-1 from its left straight into place; a received chunk is
// forwarded in the next step as soon as it has arrived.
#include <algorithm>
#include <vector>

#include "collectives/ring.h"
#include "collectives/ring_pieces.h"

namespace cohort {

Status RingAllgatherPhase(Communicator& comm, Transfers& transfers, const RingMembers& ring,
                          void* buf, const RingBlocks& blocks) {
  if (ring.size() == 1) return Status::OK();
  const RingSchedule s = MakeRingSchedule(ring, blocks, /*shift=*/0, comm.options().chunk_bytes);
  const size_t esize = s.esize;
  const std::vector<Piece>& sends = s.sends;
  const std::vector<Piece>& recvs = s.recvs;
  const size_t first = s.first_step_sends;
  auto* data = static_cast<unsigned char*>(buf);
  const int left = s.left, right = s.right;
  const size_t recv_base = transfers.recvs_posted(left);

  for (const Piece& p : recvs) transfers.PostRecv(left, data + p.offset * esize, p.count * esize);
  size_t posted_sends = 0;
  while (posted_sends < sends.size()) {
    const size_t done = transfers.recvs_done(left);
    const size_t arrived = done > recv_base ? done - recv_base : 0;
    while (posted_sends < sends.size() &&
           (posted_sends < first || posted_sends - first < arrived)) {
      const Piece& p = sends[posted_sends++];
      transfers.PostSend(right, data + p.offset * esize, p.count * esize);
    }
    if (posted_sends < sends.size()) COHORT_RETURN_IF_ERROR(transfers.Progress());
  }
  return transfers.WaitAll();
}

}  // namespace cohort
