// SharedRegion: memory a rank allocates so that the other ranks of its host
// can map it and read or write it directly (collectives/shared_buffers.h).
//
// A region is an anonymous memfd, sealed against shrinking and growing (so
// a peer's mapping can never fault on a truncated file), named
// "cohort-shared-<id>". A peer opens it through /proc/<pid>/fd/<fd>, which
// the kernel allows where this process may read the owner's memory
// (ptrace read access: the same condition as the single-copy path, minus
// its attach check), and checks before mapping that the descriptor is the
// region it was told about (name, size and seals), so a reused descriptor
// number is never mapped by mistake. Nothing is left behind when a process
// dies: the memory goes once the last mapping does.
#ifndef COHORT_NET_SHARED_REGION_H_
#define COHORT_NET_SHARED_REGION_H_

#include <cstddef>
#include <cstdint>

#include "cohort/status.h"
#include "common/fd.h"

namespace cohort {

// A buffer this process allocated for collectives (AllocateShared). Its
// first page holds a header describing the region, so FreeShared needs only
// the pointer, with or without a running runtime: the buffer belongs to the
// caller, not to the runtime, and outlives a Shutdown.
struct SharedAllocation {
  void* user = nullptr;           // what the caller gets: base + one page
  unsigned char* base = nullptr;  // start of the mapping (the header)
  size_t size = 0;                // bytes mapped, header included
  int fd = -1;                    // the memfd, open until FreeShared
  uint64_t id = 0;                // random, so ids never repeat within a process
};

// Allocates a zero-filled buffer of at least `bytes` (page aligned).
Result<SharedAllocation> AllocateShared(size_t bytes);
// Frees what AllocateShared returned; kInvalidArgument for any other pointer.
Status FreeShared(void* user);

// A peer's region, mapped into this process.
class SharedRegion {
 public:
  SharedRegion() = default;
  ~SharedRegion();
  SharedRegion(SharedRegion&& other) noexcept;
  SharedRegion& operator=(SharedRegion&& other) noexcept;
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  // Maps region `id` of process `pid`, open there as descriptor `fd`, of
  // `size` bytes. kUnavailable when the kernel refuses to open it (the
  // caller falls back to copying); kInvalidArgument when the descriptor is
  // not that region (another file, size or seals).
  static Result<SharedRegion> OpenPeer(int pid, int fd, uint64_t id, size_t size);

  unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  uint64_t id() const { return id_; }

 private:
  void Reset();

  unsigned char* data_ = nullptr;
  size_t size_ = 0;
  uint64_t id_ = 0;
};

}  // namespace cohort

#endif  // COHORT_NET_SHARED_REGION_H_
