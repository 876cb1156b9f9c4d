// TCP sockets with deadlines. A Socket owns one file descriptor; every
// blocking operation takes a Deadline and fails with kTimeout past it.
#ifndef COHORT_NET_SOCKET_H_
#define COHORT_NET_SOCKET_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cohort/status.h"
#include "common/deadline.h"

namespace cohort {

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket();
  Socket(Socket&& other) noexcept : fd_(other.Release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // Listens on host:port (port 0 = any free port), non-blocking.
  static Result<Socket> Listen(const std::string& host, int port, int backlog = 128);
  // Connects to host:port, retrying refused connections until `deadline`
  // (the peer may not be listening yet). Returns a non-blocking socket.
  static Result<Socket> Connect(const std::string& host, int port, Deadline deadline);
  // Accepts one connection, waiting until `deadline`.
  Result<Socket> Accept(Deadline deadline);

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  int Release();
  void Close();
  // Half-closes both directions so a peer blocked on us wakes up with EOF.
  void Shutdown();

  // Port this socket is bound to.
  Result<int> LocalPort() const;
  // "ip:port" of the remote end, for messages.
  std::string PeerName() const;

  // Sends / receives exactly `len` bytes, waiting until `deadline`.
  Status SendAll(const void* data, size_t len, Deadline deadline);
  Status RecvAll(void* data, size_t len, Deadline deadline);

  // Non-blocking partial I/O: returns bytes moved (0 = would block).
  // A closed connection is kPeerFailure ("connection closed").
  Result<size_t> TrySend(const void* data, size_t len);
  Result<size_t> TryRecv(void* data, size_t len);

  // Length-prefixed messages (u32 little-endian length, then bytes).
  Status SendMessage(const std::string& bytes, Deadline deadline);
  Result<std::string> RecvMessage(Deadline deadline, size_t max_len = 64u << 20);

  // Large kernel buffers and no Nagle delay, for bulk collective traffic.
  void TuneForBulk();

 private:
  int fd_ = -1;
};

// Resolves `host` (name or dotted address) to a dotted IPv4 address.
Result<std::string> ResolveHost(const std::string& host);
// Splits "host:port" or "[v6addr]:port" (brackets removed); the port must be
// 1..65535. `what` names the setting in the error message.
Status ParseHostPort(const std::string& text, const std::string& what, std::string* host,
                     int* port);

}  // namespace cohort

#endif  // COHORT_NET_SOCKET_H_
