// Layout of the shared-memory segment each rank creates for the ranks on its
// host. One segment per rank holds:
//   - HostControl: the rank's pid, abort flag and the progress counters of the
//     shared-memory allreduce (collectives/shm_allreduce.cc);
//   - `num_slots` allreduce slots (a 64-byte header plus `slot_bytes` of data), which
//     only this rank writes and its local peers read;
//   - one inbound ShmRing per local peer, which that peer writes into.
#ifndef COHORT_NET_HOST_SEGMENT_H_
#define COHORT_NET_HOST_SEGMENT_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace cohort {

struct HostControl {
  alignas(64) std::atomic<uint64_t> in_seq;   // allreduce chunks whose input is in my slots
  alignas(64) std::atomic<uint64_t> red_seq;  // chunks whose result slice I have written
  alignas(64) std::atomic<uint64_t> out_seq;  // chunks I have finished reading from peers
  alignas(64) std::atomic<uint32_t> aborted;  // set when this rank gives up; peers fail fast
  int32_t pid;
  // Doorbell: lets this rank sleep in the kernel instead of spinning when it
  // has waited long (more ranks than free cores). `sleeping` is set by the
  // owner just before it sleeps on `doorbell`; a peer that publishes progress
  // and sees `sleeping` bumps `doorbell` and wakes it.
  alignas(64) std::atomic<uint32_t> doorbell;
  std::atomic<uint32_t> sleeping;
  // Single-copy probe (rendezvous/mesh_builder.cc): where this segment is
  // mapped in the owner's address space, a random value the peers read there
  // with process_vm_readv, and the owner's verdict on reading its peers
  // (kCmaUnknown until probed; the errno of a refusal in cma_errno).
  alignas(64) uint64_t self_addr;
  uint64_t cma_token;
  std::atomic<uint32_t> cma_verdict;
  int32_t cma_errno;
};
enum : uint32_t { kCmaUnknown = 0, kCmaWorks = 1, kCmaRefused = 2 };

// Wakes the owner of `control` if it is asleep on its doorbell. Call after
// publishing anything that owner may be waiting for. Costs one load when
// nobody sleeps.
void RingDoorbell(HostControl* control);

// Sleeps on `mine`'s doorbell until a peer rings it, `ready()` turns true, or
// `max_sleep` passes. Returns whether `ready()` held. The caller re-checks its
// condition (and deadlines, liveness) after every return.
bool SleepOnDoorbell(HostControl* mine, const std::function<bool()>& ready,
                     std::chrono::microseconds max_sleep);

class HostSegmentLayout {
 public:
  HostSegmentLayout(int local_size, size_t slot_bytes, int num_slots, size_t ring_capacity);

  size_t total_bytes() const { return total_; }
  size_t slot_bytes() const { return slot_bytes_; }
  int num_slots() const { return num_slots_; }
  size_t ring_capacity() const { return ring_capacity_; }

  HostControl* control(void* base) const { return static_cast<HostControl*>(base); }
  // 64 bytes where the writer describes the collective call (collectives/call_header.h).
  void* slot_header(void* base, int slot) const;
  unsigned char* slot_data(void* base, int slot) const;
  // The ring in this segment that local rank `from` writes into.
  void* inbound_ring(void* base, int from) const;

 private:
  int local_size_;
  size_t slot_bytes_;
  int num_slots_;
  size_t ring_capacity_;
  size_t slots_offset_;
  size_t slot_stride_;
  size_t rings_offset_;
  size_t ring_stride_;
  size_t total_;
};

}  // namespace cohort

#endif  // COHORT_NET_HOST_SEGMENT_H_
