// BayesianSearch: the autotuner's policy. Bayesian optimization (a Gaussian
// process over the points measured so far, expected improvement to pick the
// next) over a finite grid of candidate settings, maximizing a score the
// caller measures. Pure: no clock, no I/O, and every choice follows from the
// seed and the scores told, so every run with the same scores is the same.
#ifndef COHORT_ENGINE_BAYESIAN_SEARCH_H_
#define COHORT_ENGINE_BAYESIAN_SEARCH_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cohort {

// One tuned knob: its candidate values, in an order where neighbours behave
// alike (e.g. powers of two), since the search measures distance by position.
struct SearchDimension {
  std::string name;
  std::vector<double> values;
};

// A candidate: an index into each dimension's values.
using SearchPoint = std::vector<size_t>;

struct BayesianSearchOptions {
  int max_samples = 20;    // points measured in all, the start point included
  int random_samples = 3;  // after the start point, drawn at random before the model steers
  // Noise variance of a score, relative to the variance of the scores seen:
  // measured step times are noisy, so the model does not interpolate them.
  double noise = 0.1;
  uint64_t seed = 0;
};

class BayesianSearch {
 public:
  struct Sample {
    SearchPoint point;
    double score = 0;
  };

  // `start` (usually the defaults) is measured first. `dimensions` must each
  // have at least one value and `start` an index within each.
  BayesianSearch(std::vector<SearchDimension> dimensions, SearchPoint start,
                 BayesianSearchOptions options);

  // The point to measure now; once done(), the best one.
  const SearchPoint& next() const { return next_; }
  // The score measured at next() (higher is better); picks the next point.
  void Tell(double score);
  // Whether the search has measured all it will (max_samples, or every candidate).
  bool done() const { return done_; }
  // The sampled point with the highest score the model predicts: with noisy
  // scores that is steadier than the single highest measurement.
  SearchPoint Best() const;
  const std::vector<Sample>& samples() const { return samples_; }
  const std::vector<SearchDimension>& dimensions() const { return dimensions_; }

 private:
  // Position of `point` in [0, 1] per dimension.
  std::vector<double> Coordinates(const SearchPoint& point) const;
  SearchPoint PointAt(size_t candidate) const;
  size_t CandidateCount() const;
  bool Sampled(const SearchPoint& point) const;
  SearchPoint RandomUnsampled();
  SearchPoint MostPromising() const;

  const std::vector<SearchDimension> dimensions_;
  const BayesianSearchOptions options_;
  uint64_t rng_state_;
  std::vector<Sample> samples_;
  SearchPoint next_;
  bool done_ = false;
};

}  // namespace cohort

#endif  // COHORT_ENGINE_BAYESIAN_SEARCH_H_
