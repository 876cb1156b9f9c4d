// Ring reduce-scatter phase: at step t member i sends block i-t-1 to its right
// and receives block i-t-2 from its left, reducing it into its own copy.
// Received chunks land in a small staging ring (kStagingChunks deep) so the
// memory used does not grow with the message.
#include <algorithm>
#include <vector>

#include "collectives/reduce_kernels.h"
#include "collectives/ring.h"
#include "collectives/ring_pieces.h"

namespace cohort {
namespace {

constexpr size_t kStagingChunks = 4;

}  // namespace

Status RingReduceScatterPhase(Communicator& comm, Transfers& transfers, const RingMembers& ring,
                              void* buf, const RingBlocks& blocks, ReduceOp op) {
  if (ring.size() == 1) return Status::OK();
  const RingSchedule s = MakeRingSchedule(ring, blocks, /*shift=*/1, comm.options().chunk_bytes);
  const size_t esize = s.esize, chunk = s.chunk_elems;
  const std::vector<Piece>& sends = s.sends;
  const std::vector<Piece>& recvs = s.recvs;
  const size_t first = s.first_step_sends;
  std::vector<unsigned char> staging(kStagingChunks * chunk * esize);
  auto* data = static_cast<unsigned char*>(buf);
  const int left = s.left, right = s.right;
  const size_t recv_base = transfers.recvs_posted(left);

  size_t posted_sends = 0, posted_recvs = 0, reduced = 0;
  while (reduced < recvs.size() || posted_sends < sends.size()) {
    // A send of step t >= 1 forwards a piece received and reduced in step t-1.
    while (posted_sends < sends.size() &&
           (posted_sends < first || posted_sends - first < reduced)) {
      const Piece& p = sends[posted_sends++];
      transfers.PostSend(right, data + p.offset * esize, p.count * esize);
    }
    while (posted_recvs < recvs.size() && posted_recvs < reduced + kStagingChunks) {
      const Piece& p = recvs[posted_recvs];
      transfers.PostRecv(left, &staging[(posted_recvs % kStagingChunks) * chunk * esize],
                         p.count * esize);
      ++posted_recvs;
    }
    COHORT_RETURN_IF_ERROR(transfers.Progress());
    while (reduced < recvs.size() && transfers.recvs_done(left) > recv_base + reduced) {
      const Piece& p = recvs[reduced];
      void* into = data + p.offset * esize;
      ReduceTwo(into, into, &staging[(reduced % kStagingChunks) * chunk * esize], p.count,
                blocks.type, op);
      ++reduced;
    }
  }
  return transfers.WaitAll();
}

}  // namespace cohort
