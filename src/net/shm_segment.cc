// POSIX shared-memory segments (shm_open + mmap).
#include "net/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace cohort {
namespace {

Result<void*> MapFd(int fd, size_t size, const std::string& name) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    return Status::IoError("mmap of shared memory '" + name + "' (" + std::to_string(size) +
                           " bytes): " + std::strerror(errno));
  }
  return p;
}

}  // namespace

ShmSegment::~ShmSegment() { Reset(); }

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      name_(std::move(other.name_)),
      owner_(std::exchange(other.owner_, false)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    name_ = std::move(other.name_);
    owner_ = std::exchange(other.owner_, false);
  }
  return *this;
}

void ShmSegment::Reset() {
  Unlink();
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

void ShmSegment::Unlink() {
  if (owner_) ::shm_unlink(name_.c_str());
  owner_ = false;
}

Result<ShmSegment> ShmSegment::Create(const std::string& name, size_t size) {
  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::IoError("cannot create shared memory '" + name + "': " + std::strerror(errno));
  }
  ShmSegment seg;
  seg.name_ = name;
  seg.owner_ = true;
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    int err = errno;
    ::close(fd);
    return Status::IoError("cannot size shared memory '" + name + "' to " + std::to_string(size) +
                           " bytes (is /dev/shm large enough?): " + std::strerror(err));
  }
  Result<void*> p = MapFd(fd, size, name);
  ::close(fd);
  if (!p.ok()) return p.status();
  seg.data_ = *p;
  seg.size_ = size;
  return seg;
}

Result<ShmSegment> ShmSegment::Open(const std::string& name, size_t size) {
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::IoError("cannot open shared memory '" + name + "': " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != size) {
    ::close(fd);
    return Status::Internal("shared memory '" + name + "' has an unexpected size");
  }
  Result<void*> p = MapFd(fd, size, name);
  ::close(fd);
  if (!p.ok()) return p.status();
  ShmSegment seg;
  seg.name_ = name;
  seg.data_ = *p;
  seg.size_ = size;
  return seg;
}

}  // namespace cohort
