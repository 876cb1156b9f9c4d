// Offsets within a rank's host segment.
#include "net/host_segment.h"

#include "net/link.h"

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

}  // namespace cohort
