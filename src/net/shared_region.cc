// Allocating memfd buffers shared with the ranks of one host, and mapping
// peers' (see shared_region.h).
#include "net/shared_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>

namespace cohort {
namespace {

constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
constexpr uint64_t kMagic = 0x636f686f72747368;  // "cohortsh"

// The first page of an allocation; the caller's buffer starts one page in.
struct Header {
  uint64_t magic;
  uint64_t id;
  uint64_t size;
  int64_t fd;
};

size_t PageSize() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

std::string RegionName(uint64_t id) { return "cohort-shared-" + std::to_string(id); }

Result<unsigned char*> Map(int fd, size_t size, const std::string& what) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    return Status::IoError("mmap of " + what + " (" + std::to_string(size) +
                           " bytes): " + ErrnoText(errno));
  }
  // Large buffers are what this is for: huge pages cut the TLB misses of a
  // peer walking the whole buffer. Ignored where unsupported.
  ::madvise(p, size, MADV_HUGEPAGE);
  return static_cast<unsigned char*>(p);
}

// Whether /proc's link for a descriptor names region `id` (a memfd shows
// as "/memfd:NAME (deleted)").
bool NamedAs(const std::string& link_path, uint64_t id) {
  char target[256];
  const ssize_t n = ::readlink(link_path.c_str(), target, sizeof(target) - 1);
  if (n < 0) return false;
  return std::string(target, static_cast<size_t>(n)) == "/memfd:" + RegionName(id) + " (deleted)";
}

uint64_t RandomId() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32 | device()) | 1;  // never 0
}

// Whether a mapping of one of this process's regions starts at `base`
// (read from /proc/self/maps, so a pointer from elsewhere is never touched).
bool MapsRegionAt(const void* base) {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return false;
  char line[512];
  bool found = false;
  while (!found && std::fgets(line, sizeof(line), maps) != nullptr) {
    found = std::strtoull(line, nullptr, 16) == reinterpret_cast<uintptr_t>(base) &&
            std::strstr(line, "/memfd:cohort-shared-") != nullptr;
  }
  std::fclose(maps);
  return found;
}

}  // namespace

Result<SharedAllocation> AllocateShared(size_t bytes) {
  const size_t page = PageSize();
  if (bytes > (SIZE_MAX >> 1)) {
    return Status::InvalidArgument("shared memory of " + std::to_string(bytes) +
                                   " bytes is too large");
  }
  SharedAllocation a;
  a.id = RandomId();
  a.size = page + (std::max<size_t>(bytes, 1) + page - 1) / page * page;
  Fd fd(::memfd_create(RegionName(a.id).c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return Status::IoError("memfd_create for shared memory: " + ErrnoText(errno));
  if (::ftruncate(fd.get(), static_cast<off_t>(a.size)) != 0) {
    return Status::IoError("sizing shared memory to " + std::to_string(a.size) +
                           " bytes: " + ErrnoText(errno));
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, kSeals) != 0) {
    return Status::IoError("sealing shared memory: " + ErrnoText(errno));
  }
  Result<unsigned char*> base = Map(fd.get(), a.size, "shared memory " + RegionName(a.id));
  if (!base.ok()) return base.status();
  a.base = *base;
  a.user = a.base + page;
  a.fd = fd.release();
  *reinterpret_cast<Header*>(a.base) = Header{kMagic, a.id, a.size, a.fd};
  return a;
}

Status FreeShared(void* user) {
  const size_t page = PageSize();
  const auto addr = reinterpret_cast<uintptr_t>(user);
  const auto refused = [user] {
    char text[32];
    std::snprintf(text, sizeof(text), "%p", user);
    return Status::InvalidArgument(std::string("FreeSharedMemory: ") + text +
                                   " is not a pointer returned by AllocateSharedMemory, or was "
                                   "freed already");
  };
  if (user == nullptr || addr % page != 0) return refused();
  auto* header = reinterpret_cast<Header*>(static_cast<unsigned char*>(user) - page);
  if (!MapsRegionAt(header) || header->magic != kMagic) return refused();
  const Header h = *header;
  ::munmap(header, h.size);
  ::close(static_cast<int>(h.fd));
  return Status::OK();
}

SharedRegion::~SharedRegion() { Reset(); }

SharedRegion::SharedRegion(SharedRegion&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      id_(std::exchange(other.id_, 0)) {}

SharedRegion& SharedRegion::operator=(SharedRegion&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

void SharedRegion::Reset() {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

Result<SharedRegion> SharedRegion::OpenPeer(int pid, int fd, uint64_t id, size_t size) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const std::string what = "shared memory " + RegionName(id) + " of pid " + std::to_string(pid);
  Fd opened(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!opened.valid()) {
    return Status::Unavailable("opening " + what + " (" + path + "): " + ErrnoText(errno));
  }
  struct stat st;
  if (!NamedAs("/proc/self/fd/" + std::to_string(opened.get()), id) ||
      ::fstat(opened.get(), &st) != 0 || static_cast<size_t>(st.st_size) != size ||
      (::fcntl(opened.get(), F_GET_SEALS) & kSeals) != kSeals) {
    return Status::InvalidArgument(path + " is not " + what + " of " + std::to_string(size) +
                                   " bytes");
  }
  Result<unsigned char*> p = Map(opened.get(), size, what);
  if (!p.ok()) return p.status();
  SharedRegion r;
  r.data_ = *p;
  r.size_ = size;
  r.id_ = id;
  return r;  // the mapping keeps the memory; the descriptor closes here
}

}  // namespace cohort
