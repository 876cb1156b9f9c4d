// A request body spooled to a scratch file.
#include "http/server/spooled_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace cohort::http {

Result<std::unique_ptr<SpooledFile>> SpooledFile::Create(const std::string& dir) {
  std::string path = dir + "/.upload.tmp.XXXXXX";
  int fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) return Status::IoError("cannot create " + path + ": " + ErrnoText(errno));
  Fd owned(fd);
  if (::fchmod(fd, 0644) != 0) {
    Status s = Status::IoError("cannot chmod " + path + ": " + ErrnoText(errno));
    ::unlink(path.c_str());
    return s;
  }
  return std::unique_ptr<SpooledFile>(new SpooledFile(std::move(owned), std::move(path)));
}

SpooledFile::~SpooledFile() {
  if (!moved_) ::unlink(path_.c_str());
}

Status SpooledFile::Append(std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd_.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IoError("cannot write " + path_ + ": " + ErrnoText(errno));
    done += static_cast<size_t>(n);
  }
  size_ += bytes.size();
  return Status::OK();
}

}  // namespace cohort::http
