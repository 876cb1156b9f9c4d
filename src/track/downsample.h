// Server-side downsampling of a metric series for charts: a curve of a
// million points becomes a few thousand that look the same on screen.
#ifndef COHORT_TRACK_DOWNSAMPLE_H_
#define COHORT_TRACK_DOWNSAMPLE_H_

#include <cstddef>
#include <vector>

#include "track/types.h"

namespace cohort::track {

// At most `max_points` of `series` (ordered by step), in step order: the first
// and last points, and from each of (max_points - 2) / 2 equal buckets its
// minimum and maximum, so no spike disappears. A series that fits is returned
// whole.
std::vector<Metric> DownsampleMinMax(std::vector<Metric> series, size_t max_points);

}  // namespace cohort::track

#endif  // COHORT_TRACK_DOWNSAMPLE_H_
