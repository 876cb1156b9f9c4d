// A POSIX shared-memory segment mapped into this process. The creator names
// it, peers on the same host open it by name, and the creator unlinks the
// name once every peer has mapped it, so nothing is left in /dev/shm even if
// the job is killed later.
#ifndef COHORT_NET_SHM_SEGMENT_H_
#define COHORT_NET_SHM_SEGMENT_H_

#include <cstddef>
#include <string>

#include "cohort/status.h"

namespace cohort {

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Creates a zero-filled segment of `size` bytes; fails if the name exists.
  static Result<ShmSegment> Create(const std::string& name, size_t size);
  // Maps an existing segment; its size must be `size`.
  static Result<ShmSegment> Open(const std::string& name, size_t size);
  // Removes the name (the mapping stays valid). Idempotent.
  void Unlink();

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  void Reset();

  void* data_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  bool owner_ = false;  // created (and so must unlink) the name
};

}  // namespace cohort

#endif  // COHORT_NET_SHM_SEGMENT_H_
