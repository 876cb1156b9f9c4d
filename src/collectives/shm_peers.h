// ShmPeers: what the shared-memory collectives (shm_allreduce.cc,
// shm_allgather.cc) share about the ranks of one host: each rank's slots and
// slot headers, its progress counters, and waiting on the peers' counters
// with liveness and deadline checks (so a killed or failed peer fails the
// wait, naming it; an Interrupt of this rank's communicator fails its next
// wait, as closing the links does for the link-based algorithms: the
// engine's Abort relies on that).
//
// Chunks are numbered across calls: a call's first chunk is the rank's
// in_seq when it starts, and chunk g uses slot g % num_slots of every rank.
// Every algorithm leaves all three counters equal at the end of a call, so
// the next call, whichever collective it is, starts from the same g on
// every rank.
#ifndef COHORT_COLLECTIVES_SHM_PEERS_H_
#define COHORT_COLLECTIVES_SHM_PEERS_H_

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "collectives/call_header.h"
#include "collectives/communicator.h"

namespace cohort {

// in: the chunk's input is in my slot; reduced: my part of it is done;
// out: I have finished reading the peers' slots for it.
enum class ShmCounter { kIn, kReduced, kOut };

class ShmPeers {
 public:
  // Requires comm.mesh().all_local_shm(). `what` names the collective in
  // errors ("allreduce"); it must outlive this object.
  ShmPeers(Communicator& comm, const char* what);

  int size() const { return n_; }
  int me() const { return me_; }
  // The communicator rank of local rank `l`.
  int rank_of(int l) const { return mesh_.local_ranks[l]; }
  size_t slot_bytes() const { return layout_.slot_bytes(); }
  // The first chunk of the call about to run.
  uint64_t first_chunk() { return Counter(me_, ShmCounter::kIn).load(std::memory_order_relaxed); }

  unsigned char* Slot(int l, uint64_t g) {
    return layout_.slot_data(mesh_.segments[l].data(), static_cast<int>(g % layout_.num_slots()));
  }
  CallHeader* Header(int l, uint64_t g) {
    return static_cast<CallHeader*>(
        layout_.slot_header(mesh_.segments[l].data(), static_cast<int>(g % layout_.num_slots())));
  }

  // Waits until every peer's counter is at least `target`.
  Status WaitForPeers(ShmCounter which, uint64_t target);
  // Waits until chunk g may be written into my slot: every peer has read the
  // chunk that last used it.
  Status WaitSlotFree(uint64_t g) {
    const uint64_t slots = layout_.num_slots();
    return WaitForPeers(ShmCounter::kOut, g + 1 - std::min<uint64_t>(g + 1, slots));
  }
  // Publishes progress and wakes any peer sleeping on it.
  void Publish(ShmCounter which, uint64_t value);
  // Sets a counter no peer waits on at this point (no doorbell).
  void Set(ShmCounter which, uint64_t value) {
    Counter(me_, which).store(value, std::memory_order_seq_cst);
  }
  // Compares `mine` with every peer's header of chunk g; a mismatch fails
  // the communicator (every rank sees it at the same chunk).
  Status CheckHeaders(uint64_t g, const CallHeader& mine);

 private:
  HostControl* Control(int l) { return layout_.control(mesh_.segments[l].data()); }
  std::atomic<uint64_t>& Counter(int l, ShmCounter which);
  // Fails the communicator if local rank l is gone or the deadline passed.
  Status CheckWaiting(int l);
  // Another thread interrupted the communicator (Communicator::Interrupt sets
  // our aborted flag, as it closes the links under the link-based
  // algorithms): fail at once, before publishing anything more; Fail
  // returns the interrupt's reason.
  Status CheckInterrupted();

  Communicator& comm_;
  Mesh& mesh_;
  const HostSegmentLayout& layout_;
  const int n_;
  const int me_;
  const char* what_;
  const Deadline deadline_;
};

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_SHM_PEERS_H_
