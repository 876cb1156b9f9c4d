// The trials' report channel (report_server.h): a Unix socket, poll(), lines.
#include "sweep/report_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace cohort::sweep {

Result<ReportServer> ReportServer::Listen(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status::InvalidArgument("socket path '" + path + "' is longer than " +
                                   std::to_string(sizeof(addr.sun_path) - 1) +
                                   " bytes; use a shorter --dir");
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IoError(std::string("socket: ") + std::strerror(errno));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ::unlink(path.c_str());  // a previous controller's
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 64) != 0) {
    Status s = Status::IoError("cannot listen on '" + path + "': " + std::strerror(errno));
    ::close(fd);
    return s;
  }
  return ReportServer(path, fd);
}

ReportServer::ReportServer(ReportServer&& other) noexcept
    : path_(std::move(other.path_)),
      listen_fd_(other.listen_fd_),
      buffers_(std::move(other.buffers_)) {
  other.listen_fd_ = -1;
  other.buffers_.clear();
}

ReportServer::~ReportServer() {
  for (const auto& [fd, unused] : buffers_) ::close(fd);
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    ::unlink(path_.c_str());
  }
}

std::vector<int> ReportServer::Descriptors() const {
  std::vector<int> fds{listen_fd_};
  for (const auto& [fd, unused] : buffers_) fds.push_back(fd);
  return fds;
}

void ReportServer::Accept() {
  int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd >= 0) buffers_[fd];
}

void ReportServer::Reply(int fd, const std::string& line) {
  std::string data = line + "\n";
  // Lines are short; a trial that stopped reading loses its answer, no more.
  (void)!::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
}

void ReportServer::Read(int fd, std::vector<ReportMessage>* out) {
  char buf[4096];
  ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
  if (n <= 0) {
    ::close(fd);
    buffers_.erase(fd);
    return;
  }
  std::string& pending = buffers_[fd];
  pending.append(buf, static_cast<size_t>(n));
  size_t nl;
  while ((nl = pending.find('\n')) != std::string::npos) {
    std::string line = pending.substr(0, nl);
    pending.erase(0, nl + 1);
    std::istringstream in(line);
    std::string word;
    ReportMessage m;
    m.fd = fd;
    if (!(in >> word >> m.trial >> m.rank >> m.step) || word != "report") {
      Reply(fd,
            "error malformed report line '" + line + "' (expected: report TRIAL RANK STEP VALUE)");
      continue;
    }
    std::getline(in >> std::ws, m.payload);
    out->push_back(std::move(m));
  }
}

std::vector<ReportMessage> ReportServer::Poll(int timeout_ms) {
  std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
  for (const auto& [fd, unused] : buffers_) fds.push_back({fd, POLLIN, 0});
  std::vector<ReportMessage> out;
  if (::poll(fds.data(), fds.size(), timeout_ms) <= 0) return out;
  for (const pollfd& p : fds) {
    if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    if (p.fd == listen_fd_) {
      Accept();
    } else {
      Read(p.fd, &out);
    }
  }
  return out;
}

}  // namespace cohort::sweep
