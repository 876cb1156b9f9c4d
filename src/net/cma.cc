// process_vm_readv/writev in loops that survive partial copies and iovec limits.
#include "net/cma.h"

#include <limits.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace cohort {
namespace {

// iovecs per system call (the kernel refuses more than IOV_MAX).
constexpr size_t kMaxIov = IOV_MAX;

// A cursor over a list of ranges, consumed front to back.
template <typename Range>
class Cursor {
 public:
  explicit Cursor(const std::vector<Range>& ranges) : ranges_(ranges) {}
  bool done() const { return index_ >= ranges_.size(); }
  // Up to kMaxIov iovecs from the current position, at most `limit` bytes.
  size_t Fill(iovec* out, size_t limit) const {
    size_t n = 0, total = 0;
    for (size_t i = index_; i < ranges_.size() && n < kMaxIov && total < limit; ++i) {
      const size_t skip = i == index_ ? offset_ : 0;
      const size_t len = std::min(Length(ranges_[i]) - skip, limit - total);
      if (len == 0) continue;
      out[n++] = iovec{Base(ranges_[i], skip), len};
      total += len;
    }
    return n;
  }
  void Advance(size_t bytes) {
    while (index_ < ranges_.size() && (bytes > 0 || Length(ranges_[index_]) == offset_)) {
      const size_t step = std::min(bytes, Length(ranges_[index_]) - offset_);
      offset_ += step;
      bytes -= step;
      if (offset_ == Length(ranges_[index_])) {
        ++index_;
        offset_ = 0;
      }
    }
  }

 private:
  static size_t Length(const RemoteRange& r) { return r.bytes; }
  static size_t Length(const iovec& v) { return v.iov_len; }
  static void* Base(const RemoteRange& r, size_t skip) {
    return reinterpret_cast<void*>(static_cast<uintptr_t>(r.addr + skip));
  }
  static void* Base(const iovec& v, size_t skip) { return static_cast<char*>(v.iov_base) + skip; }

  const std::vector<Range>& ranges_;
  size_t index_ = 0;
  size_t offset_ = 0;
};

template <typename Local>
Status Copy(bool write, int pid, const std::vector<Local>& local,
            const std::vector<RemoteRange>& remote, int* error_number) {
  Cursor<Local> here(local);
  Cursor<RemoteRange> there(remote);
  here.Advance(0);  // skips leading empty ranges
  there.Advance(0);
  std::vector<iovec> l(kMaxIov), r(kMaxIov);
  while (!here.done() && !there.done()) {
    const size_t nl = here.Fill(l.data(), SSIZE_MAX);
    size_t local_bytes = 0;
    for (size_t i = 0; i < nl; ++i) local_bytes += l[i].iov_len;
    const size_t nr = there.Fill(r.data(), local_bytes);
    const ssize_t got = write ? ::process_vm_writev(pid, l.data(), nl, r.data(), nr, 0)
                              : ::process_vm_readv(pid, l.data(), nl, r.data(), nr, 0);
    if (got <= 0) {
      const int err = got < 0 ? errno : EFAULT;
      if (error_number != nullptr) *error_number = err;
      return Status::IoError(std::string(write ? "process_vm_writev" : "process_vm_readv") +
                             " of pid " + std::to_string(pid) + ": " + std::strerror(err));
    }
    here.Advance(static_cast<size_t>(got));
    there.Advance(static_cast<size_t>(got));
  }
  if (error_number != nullptr) *error_number = 0;
  return Status::OK();
}

}  // namespace

bool CmaRefused(int error_number) {
  return error_number == EPERM || error_number == EACCES || error_number == ENOSYS;
}

bool CmaPeerGone(int error_number) { return error_number == ESRCH; }

Status CmaRead(int pid, void* local, const std::vector<RemoteRange>& remote, int* error_number) {
  size_t bytes = 0;
  for (const RemoteRange& r : remote) bytes += r.bytes;
  return Copy(false, pid, std::vector<iovec>{iovec{local, bytes}}, remote, error_number);
}

Status CmaWrite(int pid, const std::vector<iovec>& local, const std::vector<RemoteRange>& remote,
                int* error_number) {
  return Copy(true, pid, local, remote, error_number);
}

Status CmaProbe(int pid, uint64_t addr, uint64_t expected, int* error_number) {
  uint64_t seen = 0;
  COHORT_RETURN_IF_ERROR(CmaRead(pid, &seen, {RemoteRange{addr, sizeof(seen)}}, error_number));
  if (seen != expected) {
    if (error_number != nullptr) *error_number = EIO;
    return Status::IoError("process_vm_readv of pid " + std::to_string(pid) +
                           " read a value other than the one it shows in shared memory");
  }
  return Status::OK();
}

}  // namespace cohort
