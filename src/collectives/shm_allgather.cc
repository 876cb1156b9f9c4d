// Shared-memory allgather: every local rank publishes its block through its
// own slots, one slot-sized chunk at a time, and copies the peers' chunks
// straight out of their slots into place.
//
// Chunk c of the call (global chunk g = first + c, slot g % K) carries
// elements [c*E, (c+1)*E) of every rank's block, E = slot_bytes / element
// size; a rank whose block is shorter publishes less (or nothing) but still
// steps through every chunk, so all ranks count the same chunks (the number
// comes from the largest block; at least one, which carries the call
// headers). Per chunk, rank l:
//   in:  once every peer's out_seq shows it has read the chunk that last used
//        the slot, copies its part into its slot; in_seq = g+1
//   out: waits for every in_seq > g, copies each peer's part into `recv`;
//        red_seq = out_seq = g+1 (red_seq kept in step for the allreduce)
// The loop runs in(c), out(c-1), so a rank publishes its next chunk before it
// waits for the peers' current one: copies into and out of the slots overlap
// across ranks.
//
// The first chunk's slot header carries the CallHeader; every rank compares
// all headers before reading any data, so arguments that disagree (counts,
// dtype, collective) fail every rank at the same step.
#include "collectives/shm_allgather.h"

#include <algorithm>
#include <cstring>

#include "collectives/shm_peers.h"

namespace cohort {
namespace {

class ShmAllgatherRun {
 public:
  ShmAllgatherRun(Communicator& comm, void* recv, const std::vector<size_t>& offsets, DataType type,
                  const CallHeader& header)
      : peers_(comm, "allgather"),
        recv_(static_cast<unsigned char*>(recv)),
        offsets_(offsets),
        esize_(DataTypeSize(type)),
        chunk_elems_(peers_.slot_bytes() / esize_),
        header_(header) {}

  Status Run() {
    const uint64_t first = peers_.first_chunk();
    size_t largest = 0;
    for (int l = 0; l < peers_.size(); ++l) largest = std::max(largest, BlockSize(l));
    const size_t chunks = std::max<size_t>(1, (largest + chunk_elems_ - 1) / chunk_elems_);
    for (size_t c = 0; c < chunks; ++c) {
      COHORT_RETURN_IF_ERROR(CopyIn(first + c, c));
      if (c > 0) COHORT_RETURN_IF_ERROR(CopyOut(first + c - 1, c - 1));
    }
    return CopyOut(first + chunks - 1, chunks - 1);
  }

 private:
  size_t BlockBegin(int l) const { return offsets_[peers_.rank_of(l)]; }
  size_t BlockSize(int l) const {
    return offsets_[peers_.rank_of(l) + 1] - offsets_[peers_.rank_of(l)];
  }
  // Elements of local rank l's block that chunk c carries.
  size_t ChunkLen(int l, size_t c) const {
    const size_t at = c * chunk_elems_, size = BlockSize(l);
    return at >= size ? 0 : std::min(chunk_elems_, size - at);
  }
  unsigned char* ChunkInRecv(int l, size_t c) {
    return recv_ + (BlockBegin(l) + c * chunk_elems_) * esize_;
  }

  Status CopyIn(uint64_t g, size_t c) {
    const int me = peers_.me();
    COHORT_RETURN_IF_ERROR(peers_.WaitSlotFree(g));
    *peers_.Header(me, g) = header_;
    // From this rank's block of `recv` (the caller put its input there),
    // which no peer's data overwrites.
    const size_t n = ChunkLen(me, c);
    if (n > 0) std::memcpy(peers_.Slot(me, g), ChunkInRecv(me, c), n * esize_);
    peers_.Publish(ShmCounter::kIn, g + 1);
    return Status::OK();
  }

  Status CopyOut(uint64_t g, size_t c) {
    COHORT_RETURN_IF_ERROR(peers_.WaitForPeers(ShmCounter::kIn, g + 1));
    if (c == 0) COHORT_RETURN_IF_ERROR(peers_.CheckHeaders(g, header_));
    for (int l = 0; l < peers_.size(); ++l) {
      if (l == peers_.me()) continue;
      const size_t n = ChunkLen(l, c);
      if (n > 0) std::memcpy(ChunkInRecv(l, c), peers_.Slot(l, g), n * esize_);
    }
    peers_.Set(ShmCounter::kReduced, g + 1);
    peers_.Publish(ShmCounter::kOut, g + 1);
    return Status::OK();
  }

  ShmPeers peers_;
  unsigned char* const recv_;
  const std::vector<size_t>& offsets_;
  const size_t esize_;
  const size_t chunk_elems_;
  const CallHeader header_;
};

}  // namespace

Status ShmAllgather(Communicator& comm, void* recv, const std::vector<size_t>& offsets,
                    DataType type, const CallHeader& header) {
  return ShmAllgatherRun(comm, recv, offsets, type, header).Run();
}

}  // namespace cohort
