// Hyperband (Li et al. 2017) over ASHA brackets, asynchronously as in the
// ASHA paper: bracket b starts its trials at min_resource * eta^b; new trials
// go to the brackets in proportion to Hyperband's trial counts per bracket.
#include <cmath>

#include "sweep/algorithm.h"
#include "sweep/asha.h"

namespace cohort::sweep {

namespace {

class Hyperband : public Algorithm {
 public:
  Hyperband(std::unique_ptr<Sampler> sampler, const Budget& budget, double sign)
      : sampler_(std::move(sampler)), budget_(budget), sign_(sign) {
    int s_max = 0;
    for (int64_t r = budget.min_resource * budget.reduction; r <= budget.max_resource;
         r *= budget.reduction) {
      ++s_max;
    }
    for (int b = 0; b <= s_max; ++b) {
      int64_t first = budget.min_resource;
      for (int k = 0; k < b; ++k) first *= budget.reduction;
      brackets_.emplace_back(first, budget.max_resource, budget.reduction);
      // Hyperband's n for the bracket with s = s_max - b successive halvings.
      int s = s_max - b;
      weights_.push_back(std::ceil((s_max + 1.0) / (s + 1.0) * std::pow(budget.reduction, s)));
      assigned_.push_back(0);
    }
  }

  std::optional<Trial> Next(std::vector<TrialRecord>& trials, int64_t next_id) override {
    for (AshaBracket& bracket : brackets_) {
      if (auto promote = bracket.Promotable(trials)) {
        bracket.Promote(promote->first);
        Trial t = trials[promote->first].trial;
        t.resource = promote->second;
        t.resumed = true;
        return t;
      }
    }
    if (static_cast<int64_t>(trials.size()) >= budget_.trials) return std::nullopt;
    std::optional<Params> params = sampler_->Sample(CompletedObservations(trials, sign_));
    if (!params) return std::nullopt;
    // The bracket furthest behind its share.
    size_t pick = 0;
    for (size_t b = 1; b < brackets_.size(); ++b) {
      if (assigned_[b] / weights_[b] < assigned_[pick] / weights_[pick]) pick = b;
    }
    assigned_[pick] += 1;
    brackets_[pick].Admit(next_id);
    bracket_of_[next_id] = pick;
    Trial t;
    t.id = next_id;
    t.params = std::move(*params);
    t.resource = brackets_[pick].resources()[0];
    return t;
  }

  bool CanStart(const std::vector<TrialRecord>& trials) const override {
    if (static_cast<int64_t>(trials.size()) < budget_.trials) return true;
    for (const AshaBracket& bracket : brackets_) {
      if (bracket.Promotable(trials)) return true;
    }
    return false;
  }

  Decision OnReport(std::vector<TrialRecord>&, TrialRecord& record, double loss,
                    int64_t step) override {
    AshaBracket& bracket = brackets_[bracket_of_.at(record.trial.id)];
    Decision d = bracket.OnReport(record.trial.id, loss, step, &record.trial.resource);
    if (d == Decision::kStop) record.state = TrialState::kCompleted;
    return d;
  }

  void AddTrials(int64_t more) override { budget_.trials += more; }

 private:
  std::unique_ptr<Sampler> sampler_;
  Budget budget_;
  double sign_;
  std::vector<AshaBracket> brackets_;
  std::vector<double> weights_, assigned_;
  std::map<int64_t, size_t> bracket_of_;
};

}  // namespace

std::unique_ptr<Algorithm> MakeHyperband(std::unique_ptr<Sampler> sampler, const Budget& budget,
                                         double sign) {
  return std::make_unique<Hyperband>(std::move(sampler), budget, sign);
}

}  // namespace cohort::sweep
