// SharedBuffers: this rank's buffers that the other ranks of its host may
// map (net/shared_region.h, AllocateShared), and the peers' buffers this
// rank has mapped. The single-copy collectives (cma_call.h) publish, for
// each buffer of a call, the region that holds it; a peer that can map that
// region reads and writes the buffer with plain loads and stores instead of
// process_vm_readv/writev: no system call, no page pinning, and the
// reduction reads a peer's input where it lies.
//
// Thread safety: Add and Remove run on the caller's threads (allocation),
// Find and MapPeer on the thread running collectives; one mutex guards all.
#ifndef COHORT_COLLECTIVES_SHARED_BUFFERS_H_
#define COHORT_COLLECTIVES_SHARED_BUFFERS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "net/shared_region.h"

namespace cohort {

// A region as its owner publishes it; id 0: the buffer is in no region.
struct SharedRef {
  uint64_t id;
  uint64_t base;  // where the region starts in the owner's address space
  uint64_t size;  // bytes
  int64_t fd;     // the owner's descriptor

  // Whether [addr, addr + bytes) of the owner's address space lies inside.
  bool Covers(uint64_t addr, size_t bytes) const {
    return id != 0 && addr >= base && addr - base <= size && bytes <= size - (addr - base);
  }
};

class SharedBuffers {
 public:
  // Peers' regions kept mapped; the least recently used beyond this is
  // unmapped (an owner's freed buffer stays alive in a peer until then).
  static constexpr size_t kMaxPeerRegions = 32;

  void Add(const SharedAllocation& a);
  void Remove(const void* user);
  // The region of this process holding [p, p + bytes), or id 0.
  SharedRef Find(const void* p, size_t bytes);
  // Where region `ref` of process `pid` is mapped in this process (mapped on
  // first use), or null when it cannot be: the kernel refused to open it
  // (then this pid is never tried again) or the descriptor is not that region.
  unsigned char* MapPeer(int pid, const SharedRef& ref);

 private:
  struct PeerRegion {
    int pid;
    SharedRegion region;
    uint64_t last_use;
  };

  std::mutex mu_;
  std::map<uintptr_t, SharedRef> mine_;  // by base address
  std::vector<PeerRegion> peers_;        // at most kMaxPeerRegions
  std::set<int> refused_;                // pids whose regions the kernel would not open
  uint64_t uses_ = 0;
};

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_SHARED_BUFFERS_H_
