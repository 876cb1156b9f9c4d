// The search space: validated parameters ordered parents first, and the
// mapping between a parameter's value and a coordinate the samplers work in
// (float/int: the value, or its log; categorical: the index of the value).
#ifndef COHORT_SWEEP_SPACE_H_
#define COHORT_SWEEP_SPACE_H_

#include <string>
#include <vector>

#include "cohort/status.h"
#include "cohort/sweep.h"

namespace cohort::sweep {

class Space {
 public:
  // Errors name the parameter: low > high, log with low <= 0, a categorical
  // without values, a `when:` on an unknown parameter or value, a cycle.
  static Result<Space> Create(const SpaceSpec& spec);

  const std::vector<ParamSpec>& params() const { return params_; }
  size_t size() const { return params_.size(); }

  // Whether params_[i]'s condition holds for the values chosen so far.
  bool Active(size_t i, const Params& chosen) const;
  // Coordinate bounds: [low, high] in the (log) value space, or [0, n-1].
  double Lower(size_t i) const;
  double Upper(size_t i) const;
  bool Categorical(size_t i) const;
  // The value at coordinate x (clamped; ints rounded, categoricals indexed).
  Value Decode(size_t i, double x) const;
  // The coordinate of a value of params_[i].
  double Encode(size_t i, const Value& value) const;
  // The value at u in [0, 1] of the coordinate range (ints and categoricals
  // get equal shares).
  Value FromUnit(size_t i, double u) const;

 private:
  std::vector<ParamSpec> params_;
};

}  // namespace cohort::sweep

#endif  // COHORT_SWEEP_SPACE_H_
