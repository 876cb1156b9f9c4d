// TCP socket implementation over POSIX sockets and poll(2).
#include "net/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace cohort {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

Status SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return Status::IoError("fcntl(O_NONBLOCK): " + ErrnoText(errno));
  }
  return Status::OK();
}

// Waits until `fd` is ready for `events` or the deadline passes.
Status WaitReady(int fd, short events, Deadline deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, deadline.RemainingMs());
    if (n > 0) return Status::OK();
    if (n == 0 && deadline.Expired()) return Status::Timeout(std::string("timed out ") + what);
    if (n < 0 && errno != EINTR) return Status::IoError(std::string("poll: ") + ErrnoText(errno));
  }
}

Result<sockaddr_in> MakeAddress(const std::string& host, int port) {
  Result<std::string> ip = ResolveHost(host);
  if (!ip.ok()) return ip.status();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip->c_str(), &addr.sin_addr);
  return addr;
}

}  // namespace

Result<std::string> ResolveHost(const std::string& host) {
  in_addr probe{};
  if (::inet_pton(AF_INET, host.c_str(), &probe) == 1) return host;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Status::IoError("cannot resolve host '" + host + "': " + ::gai_strerror(rc));
  }
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text,
              sizeof(text));
  ::freeaddrinfo(found);
  return std::string(text);
}

Status ParseHostPort(const std::string& text, const std::string& what, std::string* host,
                     int* port) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(what + "='" + text + "' " + why +
                                   " (expected host:port, e.g. host0:29400)");
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return bad("has no port");
  std::string name = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  if (name.size() >= 2 && name.front() == '[' && name.back() == ']') {
    name = name.substr(1, name.size() - 2);
  } else if (name.find(':') != std::string::npos) {
    return bad("has an IPv6 address without brackets");
  }
  if (name.empty()) return bad("has an empty host");
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos) {
    return bad("has a malformed port");
  }
  const int value = std::stoi(port_text);
  if (value < 1 || value > 65535) return bad("has a port outside 1..65535");
  *host = name;
  *port = value;
  return Status::OK();
}

Socket::~Socket() { Close(); }

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.Release();
  }
  return *this;
}

int Socket::Release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void Socket::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::Shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

Result<Socket> Socket::Listen(const std::string& host, int port, int backlog) {
  Result<sockaddr_in> addr = MakeAddress(host, port);
  if (!addr.ok()) return addr.status();
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return Status::IoError("socket: " + ErrnoText(errno));
  int one = 1;
  ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(s.fd(), reinterpret_cast<sockaddr*>(&*addr), sizeof(sockaddr_in)) != 0) {
    return Status::IoError("cannot bind " + host + ":" + std::to_string(port) + ": " +
                           ErrnoText(errno));
  }
  if (::listen(s.fd(), backlog) != 0) return Status::IoError("listen: " + ErrnoText(errno));
  COHORT_RETURN_IF_ERROR(SetNonBlocking(s.fd()));
  return s;
}

Result<Socket> Socket::Connect(const std::string& host, int port, Deadline deadline) {
  Result<sockaddr_in> addr = MakeAddress(host, port);
  if (!addr.ok()) return addr.status();
  const std::string where = host + ":" + std::to_string(port);
  auto backoff = std::chrono::milliseconds(5);
  for (;;) {
    Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s.valid()) return Status::IoError("socket: " + ErrnoText(errno));
    COHORT_RETURN_IF_ERROR(SetNonBlocking(s.fd()));
    int rc = ::connect(s.fd(), reinterpret_cast<sockaddr*>(&*addr), sizeof(sockaddr_in));
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      Status ready = WaitReady(s.fd(), POLLOUT, deadline, ("connecting to " + where).c_str());
      if (!ready.ok()) return ready;
      socklen_t len = sizeof(err);
      ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
    }
    if (err == 0) {
      int one = 1;
      ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return s;
    }
    // Refused or unreachable: the listener may not be up yet; retry until the deadline.
    if (deadline.Expired()) {
      return Status::Timeout("cannot connect to " + where + ": " + ErrnoText(err));
    }
    std::this_thread::sleep_until(std::min(Clock::now() + backoff, deadline.at()));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
}

Result<Socket> Socket::Accept(Deadline deadline) {
  for (;;) {
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return Socket(fd);
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return Status::IoError("accept: " + ErrnoText(errno));
    }
    COHORT_RETURN_IF_ERROR(WaitReady(fd_, POLLIN, deadline, "waiting for a connection"));
  }
}

Result<int> Socket::LocalPort() const {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Status::IoError("getsockname: " + ErrnoText(errno));
  }
  return static_cast<int>(ntohs(addr.sin_port));
}

std::string Socket::PeerName() const {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &addr.sin_addr, text, sizeof(text));
  return std::string(text) + ":" + std::to_string(ntohs(addr.sin_port));
}

Result<size_t> Socket::TrySend(const void* data, size_t len) {
  for (;;) {
    ssize_t n = ::send(fd_, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return size_t{0};
    if (errno == EPIPE || errno == ECONNRESET) {
      return Status::PeerFailure("connection closed (" + ErrnoText(errno) + ")");
    }
    return Status::IoError("send: " + ErrnoText(errno));
  }
}

Result<size_t> Socket::TryRecv(void* data, size_t len) {
  if (len == 0) return size_t{0};
  for (;;) {
    ssize_t n = ::recv(fd_, data, len, MSG_DONTWAIT);
    if (n > 0) return static_cast<size_t>(n);
    if (n == 0) return Status::PeerFailure("connection closed");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return size_t{0};
    if (errno == ECONNRESET) return Status::PeerFailure("connection reset");
    return Status::IoError("recv: " + ErrnoText(errno));
  }
}

Status Socket::SendAll(const void* data, size_t len, Deadline deadline) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    Result<size_t> n = TrySend(p, len);
    if (!n.ok()) return n.status();
    if (*n == 0) {
      COHORT_RETURN_IF_ERROR(WaitReady(fd_, POLLOUT, deadline, "sending"));
      continue;
    }
    p += *n;
    len -= *n;
  }
  return Status::OK();
}

Status Socket::RecvAll(void* data, size_t len, Deadline deadline) {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    Result<size_t> n = TryRecv(p, len);
    if (!n.ok()) return n.status();
    if (*n == 0) {
      COHORT_RETURN_IF_ERROR(WaitReady(fd_, POLLIN, deadline, "receiving"));
      continue;
    }
    p += *n;
    len -= *n;
  }
  return Status::OK();
}

Status Socket::SendMessage(const std::string& bytes, Deadline deadline) {
  uint32_t len = static_cast<uint32_t>(bytes.size());
  unsigned char header[4] = {static_cast<unsigned char>(len), static_cast<unsigned char>(len >> 8),
                             static_cast<unsigned char>(len >> 16),
                             static_cast<unsigned char>(len >> 24)};
  COHORT_RETURN_IF_ERROR(SendAll(header, sizeof(header), deadline));
  return SendAll(bytes.data(), bytes.size(), deadline);
}

Result<std::string> Socket::RecvMessage(Deadline deadline, size_t max_len) {
  unsigned char header[4];
  COHORT_RETURN_IF_ERROR(RecvAll(header, sizeof(header), deadline));
  size_t len = header[0] | (header[1] << 8) | (header[2] << 16) | (size_t{header[3]} << 24);
  if (len > max_len) {
    return Status::IoError("message of " + std::to_string(len) + " bytes exceeds the limit of " +
                           std::to_string(max_len));
  }
  std::string bytes(len, '\0');
  COHORT_RETURN_IF_ERROR(RecvAll(bytes.data(), len, deadline));
  return bytes;
}

void Socket::TuneForBulk() {
  int size = 4 << 20;
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace cohort
