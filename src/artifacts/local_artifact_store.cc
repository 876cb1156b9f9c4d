// Artifacts in a local folder, reached only through real folders: every
// component is opened relative to its parent with O_NOFOLLOW, so a symlink
// inside the root (to a folder or file anywhere) is never followed.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "artifacts/artifact_store.h"

namespace cohort::artifacts {
namespace {

constexpr int kMaxTreeDepth = 256;  // folders below a deleted one

std::vector<std::string> Components(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start < path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    if (slash > start) parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

std::string Joined(const std::vector<std::string>& parts, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) out += (i ? "/" : "") + parts[i];
  return out;
}

Status Errno(const std::string& what, const std::string& path) {
  return Status::IoError(what + " " + path + ": " + ErrnoText(errno));
}

class LocalArtifactStore : public ArtifactStore {
 public:
  LocalArtifactStore(std::string root, Fd root_fd)
      : root_(std::move(root)), root_fd_(std::move(root_fd)) {}

  Result<std::vector<ArtifactEntry>> List(const std::string& dir) override {
    std::vector<ArtifactEntry> entries;
    std::vector<std::string> parts = Components(dir);
    auto folder = OpenFolder(parts, parts.size(), false);
    if (!folder.ok() || !folder->valid()) return entries;  // absent, or through a link: nothing
    for (const std::string& name : Names(folder->get())) {
      struct stat st;
      if (IsScratchName(name) ||
          ::fstatat(folder->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        continue;
      }
      if (S_ISDIR(st.st_mode)) {
        entries.push_back({name, true, 0});
      } else if (S_ISREG(st.st_mode)) {
        entries.push_back({name, false, static_cast<int64_t>(st.st_size)});
      }  // symlinks and special files are not artifacts
    }
    std::sort(entries.begin(), entries.end(),
              [](const ArtifactEntry& a, const ArtifactEntry& b) { return a.name < b.name; });
    return entries;
  }

  Result<std::optional<ArtifactContent>> Read(const std::string& path) override {
    std::vector<std::string> parts = Components(path);
    auto folder = OpenFolder(parts, parts.size() - 1, false);
    if (!folder.ok() || !folder->valid()) return std::optional<ArtifactContent>();
    // O_NONBLOCK: a FIFO planted in the store must not hang the handler.
    Fd file(::openat(folder->get(), parts.back().c_str(),
                     O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!file.valid()) {
      if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)
        return std::optional<ArtifactContent>();
      return Errno("cannot open", Full(path));
    }
    struct stat st;
    if (::fstat(file.get(), &st) != 0) return Errno("cannot stat", Full(path));
    if (!S_ISREG(st.st_mode)) return std::optional<ArtifactContent>();
    auto body = std::make_shared<http::FileBody>();
    body->fd = std::move(file);
    body->size = static_cast<uint64_t>(st.st_size);
    return std::optional<ArtifactContent>(ArtifactContent{std::move(body), ""});
  }

  Status Write(const std::string& path, http::SpooledFile* upload,
               std::string_view bytes) override {
    std::unique_ptr<http::SpooledFile> own;
    if (upload == nullptr) {
      auto spooled = http::SpooledFile::Create(root_);
      if (!spooled.ok()) return spooled.status();
      own = std::move(*spooled);
      COHORT_RETURN_IF_ERROR(own->Append(bytes));
      upload = own.get();
    }
    std::vector<std::string> parts = Components(path);
    auto folder = OpenFolder(parts, parts.size() - 1, /*create=*/true);
    if (!folder.ok()) return folder.status();
    const std::string& name = parts.back();
    struct stat st;
    if (::fstatat(folder->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (S_ISLNK(st.st_mode)) return Refused(path, "is a symlink");
      if (S_ISDIR(st.st_mode)) return Refused(path, "is a folder");
    }
    if (::fsync(upload->fd()) != 0) return Errno("cannot fsync", upload->path());
    if (::renameat(AT_FDCWD, upload->path().c_str(), folder->get(), name.c_str()) != 0) {
      return Errno("cannot rename into", Full(path));
    }
    upload->Moved();
    if (::fsync(folder->get()) != 0)
      return Errno("cannot fsync", Full(Joined(parts, parts.size() - 1)));
    return Status::OK();
  }

  Status Delete(const std::string& path) override {
    std::vector<std::string> parts = Components(path);
    auto folder = OpenFolder(parts, parts.size() - 1, false);
    if (!folder.ok() || !folder->valid()) return Status::OK();  // nothing of the store's there
    const std::string& name = parts.back();
    struct stat st;
    if (::fstatat(folder->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return errno == ENOENT ? Status::OK() : Errno("cannot stat", Full(path));
    }
    if (S_ISDIR(st.st_mode)) {
      COHORT_RETURN_IF_ERROR(RemoveTree(folder->get(), name, path, 0));
    } else if (::unlinkat(folder->get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      return Errno("cannot delete", Full(path));  // a link goes itself, its target stays
    }
    if (::fsync(folder->get()) != 0) return Errno("cannot fsync", Full(path));
    RemoveEmptiedFolders(parts);
    return Status::OK();
  }

  const std::string& spool_dir() const override { return root_; }

 private:
  std::string Full(const std::string& path) const { return root_ + "/" + path; }

  static Status Refused(const std::string& path, const std::string& why) {
    return Status::InvalidArgument("Invalid artifact path '" + path + "': '" + path + "' " + why);
  }

  // The folder made of the first `count` components, opened without
  // following a link; an invalid Fd when it does not exist (or, unless
  // `create`, goes through something other than a folder).
  Result<Fd> OpenFolder(const std::vector<std::string>& parts, size_t count, bool create) {
    Fd folder(::fcntl(root_fd_.get(), F_DUPFD_CLOEXEC, 0));
    if (!folder.valid()) return Errno("cannot open", root_);
    for (size_t i = 0; i < count; ++i) {
      const char* name = parts[i].c_str();
      int fd = ::openat(folder.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0 && errno == ENOENT && create) {
        if (::mkdirat(folder.get(), name, 0777) != 0 && errno != EEXIST) {
          return Errno("cannot create", Full(Joined(parts, i + 1)));
        }
        fd = ::openat(folder.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      }
      if (fd < 0) {
        if (errno == ENOENT && !create) return Fd();
        if (errno == ELOOP || errno == ENOTDIR) {
          if (!create) return Fd();
          struct stat st;
          bool link =
              ::fstatat(folder.get(), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
          return Refused(Joined(parts, parts.size()), "goes through " + Joined(parts, i + 1) +
                                                          (link ? ", a symlink" : ", a file"));
        }
        return Errno("cannot open", Full(Joined(parts, i + 1)));
      }
      folder = Fd(fd);
    }
    return folder;
  }

  // The names in an open folder (read whole before anything changes it).
  static std::vector<std::string> Names(int folder_fd) {
    std::vector<std::string> names;
    int fd = ::fcntl(folder_fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return names;
    DIR* d = ::fdopendir(fd);
    if (d == nullptr) {
      ::close(fd);
      return names;
    }
    while (struct dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    ::closedir(d);
    return names;
  }

  // Removes folder `name` of `parent` and all in it; links are removed,
  // never followed.
  Status RemoveTree(int parent, const std::string& name, const std::string& shown, int depth) {
    if (depth > kMaxTreeDepth)
      return Status::IoError("cannot delete " + Full(shown) + ": too deep");
    Fd folder(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!folder.valid()) {
      if (errno == ENOENT) return Status::OK();
      return Errno("cannot open", Full(shown));
    }
    for (const std::string& entry : Names(folder.get())) {
      struct stat st;
      if (::fstatat(folder.get(), entry.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        COHORT_RETURN_IF_ERROR(RemoveTree(folder.get(), entry, shown + "/" + entry, depth + 1));
      } else if (::unlinkat(folder.get(), entry.c_str(), 0) != 0 && errno != ENOENT) {
        return Errno("cannot delete", Full(shown + "/" + entry));
      }
    }
    if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
      return Errno("cannot delete", Full(shown));
    }
    return Status::OK();
  }

  // Folders above a deleted path that it left empty go too, up to the root.
  void RemoveEmptiedFolders(const std::vector<std::string>& parts) {
    for (size_t count = parts.size() - 1; count > 0; --count) {
      auto parent = OpenFolder(parts, count - 1, false);
      if (!parent.ok() || !parent->valid()) return;
      if (::unlinkat(parent->get(), parts[count - 1].c_str(), AT_REMOVEDIR) != 0) return;
    }
  }

  std::string root_;
  Fd root_fd_;
};

}  // namespace

bool IsScratchName(std::string_view name) {
  return name.find(".tmp.") != std::string_view::npos ||
         (name.size() >= 5 && name.substr(name.size() - 5) == ".lock");
}

Result<std::unique_ptr<ArtifactStore>> OpenLocalArtifactStore(const std::string& dir) {
  std::string root = dir;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.empty()) return Status::InvalidArgument("empty artifact location");
  for (size_t i = 1; i <= root.size(); ++i) {
    if (i == root.size() || root[i] == '/') {
      std::string part = root.substr(0, i);
      if (::mkdir(part.c_str(), 0777) != 0 && errno != EEXIST) return Errno("cannot create", part);
    }
  }
  // The root itself may be a link (the operator chose it); nothing below it may.
  Fd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return Errno("cannot open", root);
  return std::unique_ptr<ArtifactStore>(new LocalArtifactStore(root, std::move(fd)));
}

}  // namespace cohort::artifacts
