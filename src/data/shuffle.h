// EpochOrder: the global sample order of one epoch, a function of the chunk
// sizes, the seed and the epoch only (never of ranks or threads).
//
// Chunk-aware two-level shuffle with bounded memory: the chunks are permuted,
// cut into windows of `window_chunks` consecutive (permuted) chunks, and the
// samples of each window are permuted together. Reading a window needs only
// its chunks, yet any two samples of the dataset can end up next to each
// other and each window draws from chunks spread over the whole dataset.
#ifndef COHORT_DATA_SHUFFLE_H_
#define COHORT_DATA_SHUFFLE_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "cohort/loader.h"

namespace cohort::data {

struct ShuffleOptions {
  bool enabled = true;  // false: dataset order, one window per chunk
  uint64_t seed = 0;
  uint64_t window_chunks = 8;  // >= 1
};

class EpochOrder {
 public:
  // `chunk_sizes`: samples per chunk, in dataset order.
  EpochOrder(const std::vector<uint64_t>& chunk_sizes, const ShuffleOptions& options,
             uint64_t epoch);

  uint64_t size() const { return total_; }
  size_t num_windows() const { return window_begin_.size() - 1; }
  // Window w covers positions [window_begin(w), window_begin(w + 1)).
  uint64_t window_begin(size_t w) const { return window_begin_[w]; }
  size_t WindowOf(uint64_t position) const;  // position < size()
  // The dataset index at each of window w's positions, in order.
  std::vector<uint64_t> WindowSamples(size_t w) const;
  // Which chunk holds dataset index `sample`, and where in it.
  std::pair<size_t, uint64_t> ChunkOf(uint64_t sample) const;
  // The whole epoch (size() entries): for tests and the quality measurement.
  std::vector<uint64_t> All() const;

 private:
  ShuffleOptions options_;
  uint64_t epoch_;
  uint64_t total_ = 0;
  std::vector<uint64_t> chunk_begin_;   // dataset index of each chunk's first sample (+ end)
  std::vector<size_t> chunk_order_;     // permuted chunk positions
  std::vector<uint64_t> window_begin_;  // num_windows + 1 entries
};

// MeasureShuffle and EpochSampleOrder (include/cohort/loader.h) are defined in shuffle.cc.

}  // namespace cohort::data

#endif  // COHORT_DATA_SHUFFLE_H_
