// Offsets within a rank's host segment.
#include "net/host_segment.h"

#include "net/link.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace cohort {
namespace {

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

HostSegmentLayout::HostSegmentLayout(int local_size, size_t slot_bytes, int num_slots,
                                     size_t ring_capacity)
    : local_size_(local_size),
      slot_bytes_(slot_bytes),
      num_slots_(num_slots),
      ring_capacity_(ring_capacity) {
  slots_offset_ = RoundUp(sizeof(HostControl), 4096);
  slot_stride_ = RoundUp(64 + slot_bytes_, 4096);
  rings_offset_ = slots_offset_ + slot_stride_ * num_slots_;
  ring_stride_ = RoundUp(ShmRingBytes(ring_capacity_), 4096);
  total_ = rings_offset_ + ring_stride_ * local_size_;
}

void* HostSegmentLayout::slot_header(void* base, int slot) const {
  return static_cast<unsigned char*>(base) + slots_offset_ + slot_stride_ * slot;
}

unsigned char* HostSegmentLayout::slot_data(void* base, int slot) const {
  return static_cast<unsigned char*>(base) + slots_offset_ + slot_stride_ * slot + 64;
}

void* HostSegmentLayout::inbound_ring(void* base, int from) const {
  return static_cast<unsigned char*>(base) + rings_offset_ + ring_stride_ * from;
}

void RingDoorbell(HostControl* control) {
  if (control->sleeping.load(std::memory_order_seq_cst) == 0) return;
  control->doorbell.fetch_add(1, std::memory_order_seq_cst);
  // Not FUTEX_PRIVATE: the word is shared between processes.
  ::syscall(SYS_futex, &control->doorbell, FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

bool SleepOnDoorbell(HostControl* mine, const std::function<bool()>& ready,
                     std::chrono::microseconds max_sleep) {
  // Announce the sleep before the last check: a peer that publishes after
  // that check sees `sleeping` (both seq_cst) and bumps the doorbell, which
  // makes the futex wait return at once. No wake-up can be lost.
  mine->sleeping.store(1, std::memory_order_seq_cst);
  const uint32_t seen = mine->doorbell.load(std::memory_order_seq_cst);
  bool ok = ready();
  if (!ok) {
    timespec ts{static_cast<time_t>(max_sleep.count() / 1000000),
                static_cast<long>((max_sleep.count() % 1000000) * 1000)};
    ::syscall(SYS_futex, &mine->doorbell, FUTEX_WAIT, seen, &ts, nullptr, 0);
    ok = ready();
  }
  mine->sleeping.store(0, std::memory_order_relaxed);
  return ok;
}

}  // namespace cohort
