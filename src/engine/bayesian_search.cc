// BayesianSearch: start point, seeded random points, then expected
// improvement over the untried candidates of the grid.
#include "engine/bayesian_search.h"

#include <algorithm>

#include "engine/gaussian_process.h"

namespace cohort {
namespace {

// How far scores stay correlated, in [0, 1] units of each dimension: a few
// grid steps, so one measurement informs its neighbours but not the far end.
constexpr double kLengthScale = 0.3;
// Improvement demanded of a candidate, relative to the scores' spread: a
// little exploration beyond the current best (Brochu et al. 2010).
constexpr double kExplore = 0.01;

// splitmix64: a fixed, portable sequence for a seed (std distributions are
// not the same across standard libraries).
uint64_t NextRandom(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

BayesianSearch::BayesianSearch(std::vector<SearchDimension> dimensions, SearchPoint start,
                               BayesianSearchOptions options)
    : dimensions_(std::move(dimensions)),
      options_(options),
      rng_state_(options.seed),
      next_(std::move(start)) {
  done_ = options_.max_samples <= 0;
}

std::vector<double> BayesianSearch::Coordinates(const SearchPoint& point) const {
  std::vector<double> x(point.size());
  for (size_t d = 0; d < point.size(); ++d) {
    const size_t n = dimensions_[d].values.size();
    x[d] = n > 1 ? static_cast<double>(point[d]) / static_cast<double>(n - 1) : 0;
  }
  return x;
}

size_t BayesianSearch::CandidateCount() const {
  size_t count = 1;
  for (const SearchDimension& d : dimensions_) count *= d.values.size();
  return count;
}

SearchPoint BayesianSearch::PointAt(size_t candidate) const {
  // Mixed radix, the last dimension varying fastest.
  SearchPoint point(dimensions_.size());
  for (size_t d = dimensions_.size(); d-- > 0;) {
    point[d] = candidate % dimensions_[d].values.size();
    candidate /= dimensions_[d].values.size();
  }
  return point;
}

bool BayesianSearch::Sampled(const SearchPoint& point) const {
  return std::any_of(samples_.begin(), samples_.end(),
                     [&](const Sample& s) { return s.point == point; });
}

SearchPoint BayesianSearch::RandomUnsampled() {
  // A random candidate; the next untried one after it when already tried.
  const size_t count = CandidateCount();
  const size_t first = NextRandom(&rng_state_) % count;
  for (size_t i = 0; i < count; ++i) {
    SearchPoint point = PointAt((first + i) % count);
    if (!Sampled(point)) return point;
  }
  return {};
}

SearchPoint BayesianSearch::MostPromising() const {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  double best = samples_[0].score;
  for (const Sample& s : samples_) {
    x.push_back(Coordinates(s.point));
    y.push_back(s.score);
    best = std::max(best, s.score);
  }
  GaussianProcess gp(kLengthScale, options_.noise);
  gp.Fit(x, y);
  // The grid is small (hundreds to a few thousand points), so every untried
  // candidate is scored; ties go to the first, keeping the choice exact.
  SearchPoint chosen;
  double chosen_ei = -1;
  for (size_t c = 0; c < CandidateCount(); ++c) {
    SearchPoint point = PointAt(c);
    if (Sampled(point)) continue;
    const double ei = gp.ExpectedImprovement(Coordinates(point), best, kExplore);
    if (ei > chosen_ei) {
      chosen_ei = ei;
      chosen = std::move(point);
    }
  }
  return chosen;
}

void BayesianSearch::Tell(double score) {
  if (done_) return;
  samples_.push_back({next_, score});
  const bool all_tried = samples_.size() >= CandidateCount();
  if (static_cast<int>(samples_.size()) >= options_.max_samples || all_tried) {
    done_ = true;
    next_ = Best();
    return;
  }
  next_ = static_cast<int>(samples_.size()) <= options_.random_samples ? RandomUnsampled()
                                                                       : MostPromising();
}

SearchPoint BayesianSearch::Best() const {
  if (samples_.empty()) return next_;
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (const Sample& s : samples_) {
    x.push_back(Coordinates(s.point));
    y.push_back(s.score);
  }
  GaussianProcess gp(kLengthScale, options_.noise);
  gp.Fit(x, y);
  size_t best = 0;
  double best_mean = gp.Predict(x[0]).mean;
  for (size_t i = 1; i < samples_.size(); ++i) {
    const double mean = gp.Predict(x[i]).mean;
    if (mean > best_mean) {
      best_mean = mean;
      best = i;
    }
  }
  return samples_[best].point;
}

}  // namespace cohort
