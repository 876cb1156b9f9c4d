// Link over a pair of single-producer, single-consumer byte rings in shared
// memory. Invariant: 0 <= head - tail <= capacity; only the producer writes
// head, only the consumer writes tail; data is published by the release store
// of head and freed by the release store of tail.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "net/host_segment.h"
#include "net/link.h"

namespace cohort {

struct ShmRing {
  alignas(64) std::atomic<uint64_t> head;  // bytes ever written
  alignas(64) std::atomic<uint64_t> tail;  // bytes ever read
  alignas(64) std::atomic<uint32_t> closed;
  uint64_t capacity;
  // Data (capacity bytes) follows at offset sizeof(ShmRing).
  unsigned char* bytes() { return reinterpret_cast<unsigned char*>(this + 1); }
};
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "shared-memory rings need lock-free atomics");

size_t ShmRingBytes(size_t capacity) { return sizeof(ShmRing) + capacity; }

void InitShmRing(void* memory, size_t capacity) {
  ShmRing* ring = new (memory) ShmRing;
  ring->head.store(0);
  ring->tail.store(0);
  ring->closed.store(0);
  ring->capacity = capacity;
}

namespace {

class ShmLink : public Link {
 public:
  ShmLink(void* outbound, void* inbound, HostControl* peer)
      : out_(static_cast<ShmRing*>(outbound)), in_(static_cast<ShmRing*>(inbound)), peer_(peer) {}

  Result<size_t> TrySend(const void* data, size_t len) override {
    if (out_->closed.load(std::memory_order_relaxed) ||
        in_->closed.load(std::memory_order_relaxed)) {
      return Status::PeerFailure("shared-memory link closed");
    }
    const uint64_t head = out_->head.load(std::memory_order_relaxed);
    const uint64_t tail = out_->tail.load(std::memory_order_acquire);
    const size_t n = std::min<uint64_t>(len, out_->capacity - (head - tail));
    if (n == 0) return size_t{0};
    CopyIn(out_, head, static_cast<const unsigned char*>(data), n);
    out_->head.store(head + n, std::memory_order_seq_cst);
    RingDoorbell(peer_);
    return n;
  }

  Result<size_t> TryRecv(void* data, size_t len) override {
    const uint64_t tail = in_->tail.load(std::memory_order_relaxed);
    const uint64_t head = in_->head.load(std::memory_order_acquire);
    const size_t n = std::min<uint64_t>(len, head - tail);
    if (n == 0) {
      if (len > 0 && (in_->closed.load(std::memory_order_relaxed) ||
                      out_->closed.load(std::memory_order_relaxed))) {
        return Status::PeerFailure("shared-memory link closed");
      }
      return size_t{0};
    }
    CopyOut(in_, tail, static_cast<unsigned char*>(data), n);
    in_->tail.store(tail + n, std::memory_order_seq_cst);
    RingDoorbell(peer_);
    return n;
  }

  int send_fd() const override { return -1; }
  int recv_fd() const override { return -1; }
  bool CanMove(bool send, bool recv) const override {
    if (out_->closed.load() || in_->closed.load()) return true;  // TrySend/TryRecv report it
    const bool space =
        out_->head.load(std::memory_order_relaxed) - out_->tail.load(std::memory_order_acquire) <
        out_->capacity;
    const bool data =
        in_->head.load(std::memory_order_acquire) > in_->tail.load(std::memory_order_relaxed);
    return (send && space) || (recv && data);
  }
  void Close() override {
    out_->closed.store(1, std::memory_order_release);
    in_->closed.store(1, std::memory_order_release);
  }
  const char* kind() const override { return "shm"; }

 private:
  static void CopyIn(ShmRing* ring, uint64_t pos, const unsigned char* src, size_t n) {
    const size_t at = pos & (ring->capacity - 1);
    const size_t first = std::min<size_t>(n, ring->capacity - at);
    std::memcpy(ring->bytes() + at, src, first);
    std::memcpy(ring->bytes(), src + first, n - first);
  }
  static void CopyOut(ShmRing* ring, uint64_t pos, unsigned char* dst, size_t n) {
    const size_t at = pos & (ring->capacity - 1);
    const size_t first = std::min<size_t>(n, ring->capacity - at);
    std::memcpy(dst, ring->bytes() + at, first);
    std::memcpy(dst + first, ring->bytes(), n - first);
  }

  ShmRing* out_;
  ShmRing* in_;
  HostControl* peer_;
};

}  // namespace

std::unique_ptr<Link> MakeShmLink(void* outbound, void* inbound, HostControl* peer) {
  return std::make_unique<ShmLink>(outbound, inbound, peer);
}

}  // namespace cohort
