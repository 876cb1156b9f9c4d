// Link: a reliable, ordered byte stream to one peer, the small transport
// interface every collective algorithm is written against. Two
// implementations: TcpLink (a socket) and ShmLink (a single-producer,
// single-consumer ring in shared memory with a peer on the same host).
#ifndef COHORT_NET_LINK_H_
#define COHORT_NET_LINK_H_

#include <cstddef>
#include <memory>

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

  // A descriptor to poll(2) for readiness, or -1 for links that are polled by
  // spinning (shared memory).
  virtual int fd() const = 0;
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
