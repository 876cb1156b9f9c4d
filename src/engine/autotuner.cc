// Autotuner: step detection, sample scores and the candidate grid.
#include "engine/autotuner.h"

#include <algorithm>
#include <utility>

namespace cohort {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// `values` with `configured` added in order when it is not one of them.
SearchDimension Dimension(std::string name, std::vector<double> values, double configured) {
  if (std::find(values.begin(), values.end(), configured) == values.end()) {
    values.insert(std::lower_bound(values.begin(), values.end(), configured), configured);
  }
  return {std::move(name), std::move(values)};
}

SearchPoint PointOf(const std::vector<SearchDimension>& grid, const TuningValues& v) {
  const double values[] = {static_cast<double>(v.fusion_threshold_bytes), v.cycle_time_ms,
                           static_cast<double>(v.small_message_bytes),
                           static_cast<double>(v.single_copy_bytes)};
  SearchPoint point;
  for (size_t d = 0; d < grid.size(); ++d) {
    const std::vector<double>& all = grid[d].values;
    point.push_back(std::find(all.begin(), all.end(), values[d]) - all.begin());
  }
  return point;
}

}  // namespace

std::vector<SearchDimension> Autotuner::Grid(const TuningValues& start) {
  constexpr double K = 1024, M = 1024 * 1024;
  // Powers of two (or near) so that neighbours behave alike; the ranges
  // bracket the defaults by a factor of 16 or more on each side where that
  // makes sense: fusion from one small tensor's worth to past the largest
  // layer, the cut-overs around where the algorithms' costs cross on CPUs.
  return {
      Dimension("fusion_threshold_bytes",
                {1 * M, 2 * M, 4 * M, 8 * M, 16 * M, 32 * M, 64 * M, 128 * M},
                static_cast<double>(start.fusion_threshold_bytes)),
      Dimension("cycle_time_ms", {0.25, 0.5, 1, 2, 5, 10, 25}, start.cycle_time_ms),
      Dimension("small_message_bytes", {4 * K, 16 * K, 64 * K, 256 * K, 1 * M},
                static_cast<double>(start.small_message_bytes)),
      Dimension("single_copy_bytes", {256 * K, 1 * M, 4 * M, 16 * M, 64 * M},
                static_cast<double>(start.single_copy_bytes)),
  };
}

TuningValues Autotuner::ValuesAt(const std::vector<SearchDimension>& grid,
                                 const SearchPoint& point) {
  TuningValues v;
  v.fusion_threshold_bytes = static_cast<uint64_t>(grid[0].values[point[0]]);
  v.cycle_time_ms = grid[1].values[point[1]];
  v.small_message_bytes = static_cast<uint64_t>(grid[2].values[point[2]]);
  v.single_copy_bytes = static_cast<uint64_t>(grid[3].values[point[3]]);
  return v;
}

Autotuner::Autotuner(const TuningValues& start, const AutotuneOptions& options)
    : options_(options),
      search_(Grid(start), PointOf(Grid(start), start),
              BayesianSearchOptions{.max_samples = options.max_samples,
                                    .random_samples = 3,
                                    .noise = 0.1,
                                    .seed = options.seed}),
      current_(start),
      warmups_left_(options.warmup_samples) {}

std::optional<TuningOrder> Autotuner::Observe(const std::vector<std::string>& names, uint64_t bytes,
                                              Clock::time_point now) {
  if (done_) return std::nullopt;
  std::optional<TuningOrder> order;
  const bool new_step = std::any_of(names.begin(), names.end(),
                                    [&](const std::string& n) { return seen_.count(n) > 0; });
  if (new_step) {
    const double seconds = std::chrono::duration<double>(now - step_start_).count();
    if (!std::exchange(skip_step_, false) && seconds > 0) {
      step_rates_.push_back(static_cast<double>(step_bytes_) / seconds);
      step_seconds_.push_back(seconds);
    }
    seen_.clear();
    step_bytes_ = 0;
    if (static_cast<int>(step_rates_.size()) >= options_.steps_per_sample) order = EndSample();
  }
  if (seen_.empty()) step_start_ = now;
  seen_.insert(names.begin(), names.end());
  step_bytes_ += bytes;
  return order;
}

std::optional<TuningOrder> Autotuner::EndSample() {
  const double score = Median(step_rates_);
  const double step_s = Median(step_seconds_);
  step_rates_.clear();
  step_seconds_.clear();
  if (warmups_left_ > 0) {
    // Warm-up samples (caches, page faults, the response cache filling)
    // run on the start values and are not scored.
    --warmups_left_;
    finished_.push_back({-1, current_, score, step_s});
    return std::nullopt;
  }
  const int sample = static_cast<int>(search_.samples().size());
  finished_.push_back({sample, current_, score, step_s});
  search_.Tell(score);
  const std::vector<SearchDimension>& grid = search_.dimensions();
  TuningOrder order;
  order.values = current_ = ValuesAt(grid, search_.next());
  order.sample = sample + 1;
  if (search_.done()) {
    done_ = true;
    order.final = true;
    for (const BayesianSearch::Sample& s : search_.samples()) {
      if (s.point == search_.next()) order.score = s.score;
    }
  }
  skip_step_ = true;
  return order;
}

}  // namespace cohort
