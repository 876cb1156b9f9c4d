// Reuse of batch buffers.
#include "data/loader_buffers.h"

#include <algorithm>

namespace cohort::data {

std::shared_ptr<uint8_t[]> BufferPool::Get(uint64_t nbytes) {
  nbytes = std::max<uint64_t>(nbytes, 1);
  std::lock_guard<std::mutex> lock(mu_);
  // use_count() == 1: only the pool holds it, and new holders come only
  // through here, under the lock.
  for (Entry& e : entries_) {
    if (e.size == nbytes && e.buffer.use_count() == 1) return e.buffer;
  }
  std::shared_ptr<uint8_t[]> fresh(new uint8_t[nbytes]);
  if (entries_.size() < max_buffers_) {
    entries_.push_back({fresh, nbytes});
  } else {
    // Full: replace a free buffer of another size (the batch shape changed).
    for (Entry& e : entries_) {
      if (e.buffer.use_count() == 1) {
        e = {fresh, nbytes};
        break;
      }
    }
  }
  return fresh;
}

}  // namespace cohort::data
