// Link over several TCP connections to one peer (COHORT_TCP_STREAMS).
//
// Byte k of the stream travels on socket (k / kStripeBytes) % n. Both ends
// count the bytes they have moved, so they agree on the socket of every byte
// without any framing. Bytes still move in order: a send that finds the
// current socket's kernel buffer full stops there, but since each socket
// has its own multi-megabyte buffer (Socket::TuneForBulk), several units are
// in flight on different connections at once, which is what lets a
// high-latency or per-flow-limited path carry more than one connection's
// window. The receiver reads the units in the same order, so a full socket
// always belongs to the unit the other side is waiting for: no deadlock.
#include <algorithm>
#include <vector>

#include "net/link.h"
#include "net/socket.h"

namespace cohort {
namespace {

class StripedTcpLink : public Link {
 public:
  explicit StripedTcpLink(std::vector<Socket> sockets) : sockets_(std::move(sockets)) {
    for (Socket& s : sockets_) s.TuneForBulk();
  }

  Result<size_t> TrySend(const void* data, size_t len) override {
    return Move(&sent_, static_cast<unsigned char*>(const_cast<void*>(data)), len,
                [](Socket& s, unsigned char* p, size_t n) { return s.TrySend(p, n); });
  }
  Result<size_t> TryRecv(void* data, size_t len) override {
    return Move(&received_, static_cast<unsigned char*>(data), len,
                [](Socket& s, unsigned char* p, size_t n) { return s.TryRecv(p, n); });
  }
  int send_fd() const override { return SocketAt(sent_).fd(); }
  int recv_fd() const override { return SocketAt(received_).fd(); }
  void Close() override {
    for (Socket& s : sockets_) s.Shutdown();
  }
  bool CanMove(bool, bool) const override { return false; }  // poll(2) its fds instead
  const char* kind() const override { return "tcp"; }

 private:
  const Socket& SocketAt(uint64_t position) const {
    return sockets_[(position / kStripeBytes) % sockets_.size()];
  }

  // Moves bytes unit by unit, each on its socket, until `len` bytes moved or
  // a socket cannot take (or give) more right now.
  template <typename Io>
  Result<size_t> Move(uint64_t* position, unsigned char* data, size_t len, Io io) {
    size_t moved = 0;
    while (moved < len) {
      const size_t want = std::min<uint64_t>(len - moved, kStripeBytes - *position % kStripeBytes);
      Socket& socket = sockets_[(*position / kStripeBytes) % sockets_.size()];
      Result<size_t> n = io(socket, data + moved, want);
      if (!n.ok()) return n.status();
      moved += *n;
      *position += *n;
      if (*n < want) break;
    }
    return moved;
  }

  std::vector<Socket> sockets_;
  uint64_t sent_ = 0;      // bytes ever sent: picks the socket of the next byte
  uint64_t received_ = 0;  // bytes ever received
};

}  // namespace

std::unique_ptr<Link> MakeStripedTcpLink(std::vector<Socket> sockets) {
  if (sockets.size() == 1) return MakeTcpLink(std::move(sockets[0]));
  return std::make_unique<StripedTcpLink>(std::move(sockets));
}

}  // namespace cohort
