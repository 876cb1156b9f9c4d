// Grid search: every combination of the parameters' grid values, where a
// conditional parameter varies only in the combinations that activate it.
#include <algorithm>
#include <cmath>

#include "sweep/algorithm.h"

namespace cohort::sweep {

namespace {

constexpr size_t kMaxGridSize = 1000000;

std::vector<Value> GridValues(const Space& space, size_t i, int points) {
  const ParamSpec& p = space.params()[i];
  if (p.type == ParamSpec::Type::kCategorical) return p.values;
  const double lo = p.log ? std::log(p.low) : p.low, hi = p.log ? std::log(p.high) : p.high;
  std::vector<double> grid;
  if (p.type == ParamSpec::Type::kInt && std::floor(p.high) - std::ceil(p.low) + 1 <= points) {
    for (double v = std::ceil(p.low); v <= std::floor(p.high); ++v) grid.push_back(v);
  } else {
    for (int k = 0; k < points; ++k) {
      double x = points == 1 ? 0.5 * (lo + hi) : lo + (hi - lo) * k / (points - 1);
      // The ends exactly, not exp(log(x)).
      double v =
          k == points - 1 ? p.high : (k == 0 && points > 1 ? p.low : (p.log ? std::exp(x) : x));
      if (p.type == ParamSpec::Type::kInt) {
        v = std::clamp(std::round(v), std::ceil(p.low), std::floor(p.high));
        if (!grid.empty() && grid.back() == v) continue;
      }
      grid.push_back(v);
    }
  }
  std::vector<Value> values(grid.size());
  for (size_t k = 0; k < grid.size(); ++k) {
    if (p.type == ParamSpec::Type::kInt) {
      values[k].emplace<int64_t>(static_cast<int64_t>(grid[k]));
    } else {
      values[k].emplace<double>(grid[k]);
    }
  }
  return values;
}

// Appends every completion of `partial` from parameter i on.
Status Expand(const Space& space, const std::vector<std::vector<Value>>& grid, size_t i,
              Params& partial, std::vector<Params>& out) {
  if (out.size() > kMaxGridSize) {
    return Status::InvalidArgument("the grid has more than " + std::to_string(kMaxGridSize) +
                                   " points; use fewer values per parameter");
  }
  if (i == space.size()) {
    out.push_back(partial);
    return Status::OK();
  }
  if (!space.Active(i, partial)) return Expand(space, grid, i + 1, partial, out);
  const std::string& name = space.params()[i].name;
  for (const Value& v : grid[i]) {
    partial[name] = v;
    COHORT_RETURN_IF_ERROR(Expand(space, grid, i + 1, partial, out));
  }
  partial.erase(name);
  return Status::OK();
}

class GridSampler : public Sampler {
 public:
  explicit GridSampler(std::vector<Params> points) : points_(std::move(points)) {}

  std::optional<Params> Sample(const std::vector<Observation>&) override {
    if (next_ >= points_.size()) return std::nullopt;
    return points_[next_++];
  }

 private:
  std::vector<Params> points_;
  size_t next_ = 0;
};

}  // namespace

Result<std::unique_ptr<Sampler>> MakeGridSampler(const Space& space, int points_per_float) {
  if (points_per_float < 1) {
    return Status::InvalidArgument("grid: points per parameter must be >= 1, got " +
                                   std::to_string(points_per_float));
  }
  std::vector<std::vector<Value>> grid;
  for (size_t i = 0; i < space.size(); ++i) grid.push_back(GridValues(space, i, points_per_float));
  std::vector<Params> points;
  Params partial;
  COHORT_RETURN_IF_ERROR(Expand(space, grid, 0, partial, points));
  return std::unique_ptr<Sampler>(std::make_unique<GridSampler>(std::move(points)));
}

}  // namespace cohort::sweep
