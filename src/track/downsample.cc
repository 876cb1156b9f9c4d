// Min/max bucket downsampling.
#include "track/downsample.h"

#include <cmath>

namespace cohort::track {

std::vector<Metric> DownsampleMinMax(std::vector<Metric> series, size_t max_points) {
  if (series.size() <= max_points) return series;
  if (max_points < 4) max_points = 4;
  std::vector<Metric> out;
  out.reserve(max_points);
  out.push_back(series.front());
  size_t buckets = (max_points - 2) / 2;
  size_t inner = series.size() - 2;  // points between the first and the last
  for (size_t b = 0; b < buckets; ++b) {
    size_t begin = 1 + b * inner / buckets;
    size_t end = 1 + (b + 1) * inner / buckets;
    if (begin >= end) continue;
    size_t lo = begin, hi = begin;
    for (size_t i = begin; i < end; ++i) {
      // NaN never wins a comparison, so a bucket of numbers keeps numbers.
      if (series[i].value < series[lo].value || std::isnan(series[lo].value)) lo = i;
      if (series[i].value > series[hi].value || std::isnan(series[hi].value)) hi = i;
    }
    out.push_back(series[std::min(lo, hi)]);
    if (lo != hi) out.push_back(series[std::max(lo, hi)]);
  }
  out.push_back(series.back());
  return out;
}

}  // namespace cohort::track
