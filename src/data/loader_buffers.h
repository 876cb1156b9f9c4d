// BufferPool: batch tensors' memory, reused once every holder (the consumer,
// its numpy arrays and torch tensors) has let go of it. Fresh multi-MB
// buffers cost a page fault per 4 KiB on first touch, which made a loader of
// raw arrays spend more time in the kernel than copying.
#ifndef COHORT_DATA_LOADER_BUFFERS_H_
#define COHORT_DATA_LOADER_BUFFERS_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace cohort::data {

class BufferPool {
 public:
  // Keeps at most `max_buffers` buffers for reuse.
  explicit BufferPool(size_t max_buffers) : max_buffers_(max_buffers) {}

  // A buffer of at least `nbytes` (uninitialised) that nobody else holds.
  std::shared_ptr<uint8_t[]> Get(uint64_t nbytes);

 private:
  struct Entry {
    std::shared_ptr<uint8_t[]> buffer;
    uint64_t size = 0;
  };
  std::mutex mu_;
  size_t max_buffers_;
  std::vector<Entry> entries_;
};

}  // namespace cohort::data

#endif  // COHORT_DATA_LOADER_BUFFERS_H_
