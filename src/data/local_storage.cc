// The local-file Storage backend: pread for reads (mmap for GetBytes of
// large objects); temp file, fsync, rename
// and a directory fsync for writes, so a crash leaves whole files only; a
// flock(2)'d KEY.lock for compare-and-swap (the kernel drops it when the
// holder dies, so a killed writer never leaves the dataset locked), and an
// flock on each temp file while it is written, so a killed writer's temp
// file can be told from a live one's and collected.
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/deadline.h"
#include "data/storage.h"

namespace cohort::data {

namespace {

// GetBytes maps objects from this size up (chunks); below it a pread is cheaper than a mapping.
constexpr uint64_t kMapMinBytes = 1 << 20;

constexpr double kLockWaitSeconds = 30;  // a ref update holds the lock for a few fsyncs

Status Errno(const std::string& what, const std::string& path) {
  return Status::IoError(what + " " + path + ": " + std::strerror(errno));
}

// Closes a file descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

bool IsScratchName(const std::string& name) {
  return name.find(".tmp.") != std::string::npos ||
         (name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0);
}

Status MakeDirs(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      std::string part = dir.substr(0, i);
      if (::mkdir(part.c_str(), 0777) != 0 && errno != EEXIST) return Errno("cannot create", part);
    }
  }
  return Status::OK();
}

// Marks a new temporary file as being written: its writer holds an flock on
// it until the rename, so CollectAbandonedWrites removes only the files of
// writers that died (the kernel drops a dead process's locks). False when a
// collector took the file in the moment between its creation and this lock
// (it then has no name left). Where the filesystem has no flock the file is
// written unlocked; collectors cannot lock it either and leave it alone.
bool MarkBeingWritten(int fd) {
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) return errno != EWOULDBLOCK;
  struct stat st;
  return ::fstat(fd, &st) != 0 || st.st_nlink > 0;
}

// Creates `full`.tmp.XXXXXX (a name no other writer, thread or process, can
// share) and its folders, marked as being written; *tmp is its name, *fd its
// open descriptor. A concurrent Delete removes a folder it leaves empty,
// which can happen between making the folder and creating the file in it:
// then the folder is made again (bounded: each retry means another writer's
// Delete, or a collector, made progress).
Status CreateScratchFile(const std::string& full, const std::string& dir, std::string* tmp,
                         int* fd) {
  constexpr int kAttempts = 100;
  for (int attempt = 1;; ++attempt) {
    COHORT_RETURN_IF_ERROR(MakeDirs(dir));
    *tmp = full + ".tmp.XXXXXX";
    *fd = ::mkostemp(tmp->data(), O_CLOEXEC);
    if (*fd >= 0 && MarkBeingWritten(*fd)) return Status::OK();
    if (*fd >= 0) {
      ::close(*fd);
      errno = ENOENT;  // a collector removed it
    }
    if (errno != ENOENT || attempt == kAttempts) return Errno("cannot create", *tmp);
  }
}

// Fsyncs `dir`, or, when a concurrent Delete removed it (it emptied it after
// this call's change), its nearest existing ancestor up to `root`: that is
// where the removal of the folder, and so of this call's entry, is recorded.
Status FsyncDirOrAncestor(std::string dir, const std::string& root) {
  for (;;) {
    Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() < 0 && errno == ENOENT && dir.size() > root.size()) {
      dir = dir.substr(0, dir.rfind('/'));
      continue;
    }
    if (fd.get() < 0 || ::fsync(fd.get()) != 0) return Errno("cannot fsync directory", dir);
    return Status::OK();
  }
}

Status WriteAll(int fd, std::string_view bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot write", path);
    done += static_cast<size_t>(n);
  }
  return Status::OK();
}

class LocalStorage : public Storage {
 public:
  explicit LocalStorage(std::string dir) : dir_(std::move(dir)) {}

  const std::string& location() const override { return dir_; }

  Result<std::optional<std::string>> Get(const std::string& path) override {
    std::string full = Full(path);
    Fd fd(::open(full.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
      if (errno == ENOENT) return std::optional<std::string>();
      return Errno("cannot open", full);
    }
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return Errno("cannot stat", full);
    Result<std::string> bytes = PreadAll(fd.get(), 0, static_cast<uint64_t>(st.st_size), full);
    if (!bytes.ok()) return bytes.status();
    return std::optional<std::string>(std::move(*bytes));
  }

  // MAP_POPULATE maps every page of the (page-cached) file in one call
  // instead of one fault per 4 KiB on first touch.
  Result<std::optional<ObjectBytes>> GetBytes(const std::string& path) override {
    std::string full = Full(path);
    Fd fd(::open(full.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
      if (errno == ENOENT) return std::optional<ObjectBytes>();
      return Errno("cannot open", full);
    }
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return Errno("cannot stat", full);
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (size < kMapMinBytes) {
      Result<std::string> bytes = PreadAll(fd.get(), 0, size, full);
      if (!bytes.ok()) return bytes.status();
      return std::optional<ObjectBytes>(ObjectBytes::Own(std::move(*bytes)));
    }
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd.get(), 0);
    if (map == MAP_FAILED) return Errno("cannot map", full);
    std::shared_ptr<const void> owner(
        map, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
    return std::optional<ObjectBytes>(
        ObjectBytes{std::move(owner), std::string_view(static_cast<const char*>(map), size)});
  }

  Result<std::string> Read(const std::string& path, uint64_t offset, uint64_t len) override {
    std::string full = Full(path);
    Fd fd(::open(full.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return Errno("cannot open", full);
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return Errno("cannot stat", full);
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    return PreadAll(fd.get(), offset, offset >= size ? 0 : std::min(len, size - offset), full);
  }

  Result<bool> Exists(const std::string& path) override {
    struct stat st;
    if (::stat(Full(path).c_str(), &st) == 0) return true;
    if (errno == ENOENT) return false;
    return Errno("cannot stat", Full(path));
  }

  Status Put(const std::string& path, std::string_view bytes) override {
    std::string full = Full(path);
    std::string dir = full.substr(0, full.rfind('/'));
    std::string tmp;
    int scratch = -1;
    COHORT_RETURN_IF_ERROR(CreateScratchFile(full, dir, &tmp, &scratch));
    {
      Fd fd(scratch);
      Status s = ::fchmod(fd.get(), 0644) == 0 ? WriteAll(fd.get(), bytes, tmp)
                                               : Errno("cannot chmod", tmp);
      if (s.ok() && ::fsync(fd.get()) != 0) s = Errno("cannot fsync", tmp);
      if (!s.ok()) {
        ::unlink(tmp.c_str());
        return s;
      }
    }
    if (::rename(tmp.c_str(), full.c_str()) != 0) {
      Status s = Errno("cannot rename into", full);
      ::unlink(tmp.c_str());
      return s;
    }
    return FsyncDirOrAncestor(dir, dir_);
  }

  Status Delete(const std::string& path) override {
    std::string full = Full(path);
    if (::unlink(full.c_str()) != 0) {
      return errno == ENOENT ? Status::OK() : Errno("cannot delete", full);
    }
    return RemovedFromFolder(full);
  }

  Result<std::vector<std::string>> CollectAbandonedWrites(const std::string& prefix) override {
    std::vector<std::string> scratch, removed;
    COHORT_RETURN_IF_ERROR(Walk(prefix, Listing::kScratch, &scratch));
    for (const std::string& key : scratch) {
      if (key.find(".tmp.") == std::string::npos) continue;  // lock files stay
      const std::string full = Full(key);
      Fd fd(::open(full.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      // Held: a live writer. Not lockable: no flock here, nothing proven.
      if (fd.get() < 0 || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;
      // The name must still be the file locked (not renamed into place and
      // replaced since), and it goes while the lock is held.
      struct stat held, named;
      if (::fstat(fd.get(), &held) != 0 || ::lstat(full.c_str(), &named) != 0 ||
          held.st_dev != named.st_dev || held.st_ino != named.st_ino) {
        continue;
      }
      if (::unlink(full.c_str()) != 0) {
        if (errno == ENOENT) continue;
        return Errno("cannot delete", full);
      }
      removed.push_back(key);
      COHORT_RETURN_IF_ERROR(RemovedFromFolder(full));
    }
    return removed;
  }

  Result<std::vector<std::string>> List(const std::string& prefix) override {
    std::vector<std::string> keys;
    COHORT_RETURN_IF_ERROR(Walk(prefix, Listing::kObjects, &keys));
    std::sort(keys.begin(), keys.end());
    return keys;
  }

  Status ReplaceIf(const std::string& path, const std::optional<std::string>& expected,
                   std::string_view bytes, const std::function<void()>& while_locked) override {
    std::string lock_path = Full(path) + ".lock";
    COHORT_RETURN_IF_ERROR(MakeDirs(lock_path.substr(0, lock_path.rfind('/'))));
    Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666));
    if (lock.get() < 0) return Errno("cannot open lock", lock_path);
    COHORT_RETURN_IF_ERROR(LockWithDeadline(lock.get(), lock_path));
    Result<std::optional<std::string>> current = Get(path);
    if (!current.ok()) return current.status();
    if (*current != expected) {
      return ConflictError(path + " changed: expected " + QuoteContent(expected) + ", found " +
                           QuoteContent(*current));
    }
    if (while_locked) while_locked();
    return Put(path, bytes);  // the lock is released when `lock` closes
  }

 private:
  enum class Listing { kObjects, kScratch };  // what Walk collects

  std::string Full(const std::string& path) const { return dir_ + "/" + path; }

  // After `full` was unlinked: a folder it leaves empty goes too (rmdir fails
  // on a non-empty one; ENOENT: a concurrent Delete removed it first), and
  // the removal is made durable.
  Status RemovedFromFolder(const std::string& full) {
    std::string dir = full.substr(0, full.rfind('/'));
    if (dir != dir_ && (::rmdir(dir.c_str()) == 0 || errno == ENOENT)) {
      dir = dir.substr(0, dir.rfind('/'));
    }
    return FsyncDirOrAncestor(dir, dir_);
  }

  // Waits for the lock with a deadline; the holder only renames one file, so
  // the wait is short unless the disk is stuck.
  static Status LockWithDeadline(int fd, const std::string& lock_path) {
    Deadline deadline = Deadline::AfterSeconds(kLockWaitSeconds);
    long pause_ns = 50'000;
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) return Errno("cannot lock", lock_path);
      if (deadline.Expired()) {
        return ConflictError(lock_path + " is held by another writer for more than " +
                             std::to_string(static_cast<int>(kLockWaitSeconds)) + " s");
      }
      struct timespec ts = {0, pause_ns};
      ::nanosleep(&ts, nullptr);
      pause_ns = std::min(pause_ns * 2, 10'000'000L);
    }
    return Status::OK();
  }

  static Result<std::string> PreadAll(int fd, uint64_t offset, uint64_t len,
                                      const std::string& full) {
    std::string out(len, '\0');
    size_t done = 0;
    while (done < len) {
      ssize_t n = ::pread(fd, out.data() + done, len - done, static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Errno("cannot read", full);
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    out.resize(done);
    return out;
  }

  Result<std::vector<ListedObject>> ListModified(const std::string& prefix) override {
    Result<std::vector<std::string>> keys = List(prefix);
    if (!keys.ok()) return keys.status();
    std::vector<ListedObject> out;
    for (std::string& key : *keys) {
      struct stat st;
      if (::stat(Full(key).c_str(), &st) != 0) {
        if (errno == ENOENT) continue;  // removed since the listing
        return Errno("cannot stat", Full(key));
      }
      out.push_back({std::move(key), static_cast<int64_t>(st.st_mtime)});
    }
    return out;
  }

  // The keys of the objects, or of the scratch files, under `rel`.
  Status Walk(const std::string& rel, Listing what, std::vector<std::string>* keys) {
    std::string full = rel.empty() ? dir_ : Full(rel);
    DIR* d = ::opendir(full.c_str());
    if (d == nullptr) return errno == ENOENT ? Status::OK() : Errno("cannot list", full);
    std::vector<std::pair<std::string, bool>> entries;
    while (struct dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      const bool is_dir = e->d_type == DT_DIR;
      if (!is_dir && IsScratchName(name) != (what == Listing::kScratch)) continue;
      entries.emplace_back(name, is_dir);
    }
    ::closedir(d);
    for (const auto& [name, is_dir] : entries) {
      std::string key = rel.empty() ? name : rel + "/" + name;
      if (is_dir) {
        COHORT_RETURN_IF_ERROR(Walk(key, what, keys));
      } else {
        keys->push_back(key);
      }
    }
    return Status::OK();
  }

  std::string dir_;
};

}  // namespace

Result<std::vector<ListedObject>> Storage::ListModified(const std::string&) {
  return Status::InvalidArgument("dataset " + location() +
                                 ": this storage cannot list modification times");
}

Result<std::vector<std::string>> Storage::CollectAbandonedWrites(const std::string&) {
  return std::vector<std::string>();
}

Status Storage::Delete(const std::string& path) {
  return Status::InvalidArgument("dataset " + location() + ": this storage cannot remove " + path);
}

Status ConflictError(const std::string& message) { return Status::Aborted("conflict: " + message); }

std::string QuoteContent(const std::optional<std::string>& content) {
  if (!content) return "none";
  std::string q = *content;
  while (!q.empty() && (q.back() == '\n' || q.back() == ' ')) q.pop_back();
  return "'" + q + "'";
}

ObjectBytes ObjectBytes::Own(std::string bytes) {
  auto owner = std::make_shared<const std::string>(std::move(bytes));
  std::string_view view = *owner;
  return ObjectBytes{std::move(owner), view};
}

Result<std::optional<ObjectBytes>> Storage::GetBytes(const std::string& path) {
  Result<std::optional<std::string>> bytes = Get(path);
  if (!bytes.ok()) return bytes.status();
  if (!*bytes) return std::optional<ObjectBytes>();
  return std::optional<ObjectBytes>(ObjectBytes::Own(std::move(**bytes)));
}

Result<std::vector<std::string>> Storage::ReadMany(const std::vector<ByteRange>& ranges) {
  std::vector<std::string> out;
  out.reserve(ranges.size());
  for (const ByteRange& range : ranges) {
    Result<std::string> bytes = Read(range.path, range.offset, range.len);
    if (!bytes.ok()) return bytes.status();
    out.push_back(std::move(*bytes));
  }
  return out;
}

Result<std::unique_ptr<Storage>> OpenLocalStorage(const std::string& dir, bool create) {
  std::string clean = dir;
  while (clean.size() > 1 && clean.back() == '/') clean.pop_back();
  if (clean.empty()) return Status::InvalidArgument("empty dataset location");
  if (create) COHORT_RETURN_IF_ERROR(MakeDirs(clean));
  struct stat st;
  if (::stat(clean.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::IoError("dataset " + clean + ": no such directory");
  }
  return std::unique_ptr<Storage>(new LocalStorage(clean));
}

}  // namespace cohort::data
