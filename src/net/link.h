// Link: a reliable, ordered byte stream to one peer, the small transport
// interface every collective algorithm is written against. Two
// implementations: TcpLink (one socket, or several with the bytes striped
// over them) and ShmLink (a single-producer, single-consumer ring in shared
// memory with a peer on the same host).
#ifndef COHORT_NET_LINK_H_
#define COHORT_NET_LINK_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "cohort/status.h"

namespace cohort {

class Socket;

class Link {
 public:
  virtual ~Link() = default;

  // Non-blocking: move up to `len` bytes and return how many moved (0 when
  // the link cannot take or give bytes right now). A link closed by the peer
  // is kPeerFailure.
  virtual Result<size_t> TrySend(const void* data, size_t len) = 0;
  virtual Result<size_t> TryRecv(void* data, size_t len) = 0;

  // The descriptor to poll(2) for POLLOUT before the next TrySend, or for
  // POLLIN before the next TryRecv (they differ when a link stripes over
  // several sockets); -1 for links that are polled by spinning (shared memory).
  virtual int send_fd() const = 0;
  virtual int recv_fd() const = 0;
  // Marks the link closed in both directions so the peer's next wait fails
  // promptly instead of running into its deadline.
  virtual void Close() = 0;
  // For links polled by spinning: whether a TrySend (`send`) or TryRecv
  // (`recv`) could move bytes now. Lets a waiter re-check before it sleeps.
  virtual bool CanMove(bool send, bool recv) const = 0;
  // "tcp" or "shm", for messages and benchmarks.
  virtual const char* kind() const = 0;
};

std::unique_ptr<Link> MakeTcpLink(Socket socket);
// A link over several sockets to one peer (COHORT_TCP_STREAMS): the byte
// stream is cut into kStripeBytes units dealt round-robin over the sockets,
// so one large transfer keeps several TCP connections busy. Both ends must
// list the same connections in the same order.
std::unique_ptr<Link> MakeStripedTcpLink(std::vector<Socket> sockets);
constexpr size_t kStripeBytes = 64 << 10;

// The control words of one direction of a shared-memory link. Lives in
// shared memory; producer and consumer may be different processes.
struct ShmRing;
// Size in bytes of a ring with `capacity` data bytes (a power of two).
size_t ShmRingBytes(size_t capacity);
// Initialises a ring placed at `memory` (zeroed by the segment creator).
void InitShmRing(void* memory, size_t capacity);
struct HostControl;
// A link that sends into `outbound` (in the peer's segment) and receives from
// `inbound` (in ours); it rings the peer's doorbell (`peer`) whenever it
// publishes data or frees space.
std::unique_ptr<Link> MakeShmLink(void* outbound, void* inbound, HostControl* peer);

}  // namespace cohort

#endif  // COHORT_NET_LINK_H_
