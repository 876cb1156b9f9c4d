// Grid, random, Sobol and TPE search: every trial runs to the end of its
// resource; the sampler proposes each new trial's values.
#include "sweep/algorithm.h"

namespace cohort::sweep {

std::vector<Observation> CompletedObservations(const std::vector<TrialRecord>& trials,
                                               double sign) {
  std::vector<Observation> done;
  for (const TrialRecord& r : trials) {
    if (r.state == TrialState::kCompleted && r.value) {
      done.push_back({&r.trial.params, sign * *r.value});
    }
  }
  return done;
}

namespace {

class SamplerAlgorithm : public Algorithm {
 public:
  SamplerAlgorithm(std::unique_ptr<Sampler> sampler, const Budget& budget, double sign)
      : sampler_(std::move(sampler)), budget_(budget), sign_(sign) {}

  std::optional<Trial> Next(std::vector<TrialRecord>& trials, int64_t next_id) override {
    if (exhausted_ || static_cast<int64_t>(trials.size()) >= budget_.trials) return std::nullopt;
    std::optional<Params> params = sampler_->Sample(CompletedObservations(trials, sign_));
    if (!params) {
      exhausted_ = true;
      return std::nullopt;
    }
    Trial t;
    t.id = next_id;
    t.params = std::move(*params);
    t.resource = budget_.max_resource;
    return t;
  }

  bool CanStart(const std::vector<TrialRecord>& trials) const override {
    return !exhausted_ && static_cast<int64_t>(trials.size()) < budget_.trials;
  }

  Decision OnReport(std::vector<TrialRecord>&, TrialRecord&, double, int64_t) override {
    return Decision::kContinue;
  }

  void AddTrials(int64_t more) override { budget_.trials += more; }

 private:
  std::unique_ptr<Sampler> sampler_;
  Budget budget_;
  double sign_;
  bool exhausted_ = false;
};

}  // namespace

std::unique_ptr<Algorithm> MakeSamplerAlgorithm(std::unique_ptr<Sampler> sampler,
                                                const Budget& budget, double sign) {
  return std::make_unique<SamplerAlgorithm>(std::move(sampler), budget, sign);
}

}  // namespace cohort::sweep
