// The two-level (chunk, then window) epoch shuffle and its quality measure.
#include "data/shuffle.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "data/shuffle_rng.h"

namespace cohort::data {

namespace {

template <typename T>
void FisherYates(std::vector<T>* v, ShuffleRng* rng) {
  for (size_t i = v->size(); i > 1; --i) std::swap((*v)[i - 1], (*v)[rng->Below(i)]);
}

}  // namespace

EpochOrder::EpochOrder(const std::vector<uint64_t>& chunk_sizes, const ShuffleOptions& options,
                       uint64_t epoch)
    : options_(options), epoch_(epoch) {
  if (options_.window_chunks == 0) options_.window_chunks = 1;
  if (!options_.enabled) options_.window_chunks = 1;
  chunk_begin_.push_back(0);
  for (uint64_t n : chunk_sizes) chunk_begin_.push_back(chunk_begin_.back() + n);
  total_ = chunk_begin_.back();
  chunk_order_.resize(chunk_sizes.size());
  std::iota(chunk_order_.begin(), chunk_order_.end(), size_t{0});
  if (options_.enabled) {
    ShuffleRng rng(ShuffleRng::Key({options_.seed, epoch_, 0xc4u}));
    FisherYates(&chunk_order_, &rng);
  }
  window_begin_.push_back(0);
  uint64_t pos = 0;
  for (size_t k = 0; k < chunk_order_.size(); ++k) {
    pos += chunk_sizes[chunk_order_[k]];
    if ((k + 1) % options_.window_chunks == 0 || k + 1 == chunk_order_.size()) {
      window_begin_.push_back(pos);
    }
  }
}

size_t EpochOrder::WindowOf(uint64_t position) const {
  auto it = std::upper_bound(window_begin_.begin(), window_begin_.end(), position);
  return static_cast<size_t>(it - window_begin_.begin()) - 1;
}

std::vector<uint64_t> EpochOrder::WindowSamples(size_t w) const {
  std::vector<uint64_t> samples;
  samples.reserve(window_begin_[w + 1] - window_begin_[w]);
  const size_t first = w * options_.window_chunks;
  const size_t last = std::min(chunk_order_.size(), first + options_.window_chunks);
  for (size_t k = first; k < last; ++k) {
    const size_t c = chunk_order_[k];
    for (uint64_t i = chunk_begin_[c]; i < chunk_begin_[c + 1]; ++i) samples.push_back(i);
  }
  if (options_.enabled) {
    ShuffleRng rng(ShuffleRng::Key({options_.seed, epoch_, 0x3du, w}));
    FisherYates(&samples, &rng);
  }
  return samples;
}

std::pair<size_t, uint64_t> EpochOrder::ChunkOf(uint64_t sample) const {
  auto it = std::upper_bound(chunk_begin_.begin(), chunk_begin_.end(), sample);
  const size_t c = static_cast<size_t>(it - chunk_begin_.begin()) - 1;
  return {c, sample - chunk_begin_[c]};
}

std::vector<uint64_t> EpochOrder::All() const {
  std::vector<uint64_t> all;
  all.reserve(total_);
  for (size_t w = 0; w < num_windows(); ++w) {
    std::vector<uint64_t> s = WindowSamples(w);
    all.insert(all.end(), s.begin(), s.end());
  }
  return all;
}

std::vector<uint64_t> EpochSampleOrder(const std::vector<uint64_t>& chunk_samples, uint64_t seed,
                                       uint64_t epoch, uint64_t window_chunks, bool shuffle) {
  return EpochOrder(chunk_samples, {shuffle, seed, window_chunks}, epoch).All();
}

ShuffleQuality MeasureShuffle(const std::vector<uint64_t>& order,
                              const std::vector<uint64_t>& chunk_sizes) {
  ShuffleQuality q;
  const size_t n = order.size();
  if (n < 2) return q;
  std::vector<uint64_t> chunk_of(n);
  uint64_t at = 0;
  for (size_t c = 0; c < chunk_sizes.size(); ++c) {
    for (uint64_t k = 0; k < chunk_sizes[c] && at < n; ++k) chunk_of[at++] = c;
  }
  double jumps = 0, displacement = 0;
  size_t same_chunk = 0;
  for (size_t i = 0; i < n; ++i) {
    displacement += std::fabs(static_cast<double>(order[i]) - static_cast<double>(i));
    if (i + 1 == n) break;
    jumps += std::fabs(static_cast<double>(order[i + 1]) - static_cast<double>(order[i]));
    same_chunk += chunk_of[order[i]] == chunk_of[order[i + 1]];
  }
  const double uniform = (static_cast<double>(n) + 1) / 3;
  q.mean_jump_ratio = jumps / static_cast<double>(n - 1) / uniform;
  q.same_chunk_fraction = static_cast<double>(same_chunk) / static_cast<double>(n - 1);
  q.mean_displacement_ratio = displacement / static_cast<double>(n) / uniform;
  return q;
}

}  // namespace cohort::data
