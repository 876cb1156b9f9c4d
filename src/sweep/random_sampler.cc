// Random search: every active parameter drawn uniformly over its (log) range.
#include "sweep/algorithm.h"

namespace cohort::sweep {

namespace {

class RandomSampler : public Sampler {
 public:
  RandomSampler(const Space& space, uint64_t seed) : space_(space), rng_(seed) {}

  std::optional<Params> Sample(const std::vector<Observation>&) override {
    Params params;
    for (size_t i = 0; i < space_.size(); ++i) {
      double u = Uniform01(rng_);  // drawn even when inactive: one draw per parameter per trial
      if (space_.Active(i, params)) params[space_.params()[i].name] = space_.FromUnit(i, u);
    }
    return params;
  }

 private:
  Space space_;
  std::mt19937_64 rng_;
};

}  // namespace

std::unique_ptr<Sampler> MakeRandomSampler(const Space& space, uint64_t seed) {
  return std::make_unique<RandomSampler>(space, seed);
}

}  // namespace cohort::sweep
