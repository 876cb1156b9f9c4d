// Spool files: append, read back, rewrite.
#include "track/spool.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cohort::track {
namespace {

Status Errno(const std::string& what) {
  return Status::IoError(what + ": " + std::strerror(errno));
}

}  // namespace

Result<std::unique_ptr<Spool>> Spool::Open(const std::string& dir, const std::string& name) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string path = dir + "/" + name + ".jsonl";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot open spool " + path);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return Status::InvalidArgument("spool " + path + " is in use by another process");
  }
  std::unique_ptr<Spool> spool(new Spool(path, fd, 0));
  auto entries = spool->ReadAll();
  if (!entries.ok()) return entries.status();
  spool->size_ = entries->size();
  return spool;
}

Spool::~Spool() {
  if (size_ == 0) unlink(path_.c_str());
  close(fd_);
}

Status Spool::Append(const nlohmann::json& entry) {
  std::string line = entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  size_t written = 0;
  while (written < line.size()) {
    ssize_t n = write(fd_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("writing spool " + path_);
    written += static_cast<size_t>(n);
  }
  if (fsync(fd_) != 0) return Errno("fsync of spool " + path_);
  ++size_;
  return Status::OK();
}

Result<std::vector<nlohmann::json>> Spool::ReadAll() {
  std::ifstream in(path_);
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) {
    auto entry = nlohmann::json::parse(line, nullptr, false);
    if (!entry.is_discarded()) out.push_back(std::move(entry));
  }
  return out;
}

Status Spool::Rewrite(const std::vector<nlohmann::json>& entries) {
  std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& e : entries) {
      out << e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
    out.flush();
    if (!out) return Status::IoError("cannot write " + tmp);
  }
  int tfd = open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (tfd >= 0) {
    fsync(tfd);
    close(tfd);
  }
  // The lock stays on our descriptor of the old inode: take it onto the new file.
  if (rename(tmp.c_str(), path_.c_str()) != 0) return Errno("renaming " + tmp);
  int fd = open(path_.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
  if (fd < 0) return Errno("reopening spool " + path_);
  flock(fd, LOCK_EX);
  close(fd_);
  fd_ = fd;
  size_ = entries.size();
  return Status::OK();
}

std::vector<std::string> ListSpools(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".jsonl") out.push_back(entry.path().stem().string());
  }
  return out;
}

}  // namespace cohort::track
