// The journal as a local file: append, fsync, and cut a torn last line.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sweep/journal.h"

namespace cohort::sweep {

namespace {

Status Errno(const std::string& what, const std::string& path) {
  return Status::IoError(what + " '" + path + "': " + std::strerror(errno));
}

class FileJournal : public Journal {
 public:
  FileJournal(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~FileJournal() override { ::close(fd_); }

  Status Append(const std::string& record) override {
    if (record.find('\n') != std::string::npos) {
      return Status::InvalidArgument("journal record holds a newline");
    }
    std::string line = record + "\n";
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Errno("cannot append to journal", path_);
      p += n;
      left -= static_cast<size_t>(n);
    }
    if (::fsync(fd_) != 0) return Errno("cannot fsync journal", path_);
    return Status::OK();
  }

  Result<std::vector<std::string>> Records() override {
    std::string text;
    char buf[65536];
    off_t offset = 0;
    for (;;) {
      ssize_t n = ::pread(fd_, buf, sizeof(buf), offset);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Errno("cannot read journal", path_);
      if (n == 0) break;
      text.append(buf, static_cast<size_t>(n));
      offset += n;
    }
    size_t complete = text.rfind('\n');
    complete = complete == std::string::npos ? 0 : complete + 1;
    if (complete < text.size() && ::ftruncate(fd_, static_cast<off_t>(complete)) != 0) {
      return Errno("cannot cut the torn last record of journal", path_);
    }
    std::vector<std::string> records;
    size_t start = 0;
    while (start < complete) {
      size_t end = text.find('\n', start);
      if (end > start) records.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    return records;
  }

 private:
  std::string path_;
  int fd_;
};

}  // namespace

Result<std::unique_ptr<Journal>> OpenFileJournal(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot open journal", path);
  return std::unique_ptr<Journal>(std::make_unique<FileJournal>(path, fd));
}

}  // namespace cohort::sweep
