// ASHA: one bracket of rungs (asha.h) fed with new trials from a sampler.
#include "sweep/asha.h"

#include <algorithm>

#include "sweep/algorithm.h"

namespace cohort::sweep {

AshaBracket::AshaBracket(int64_t min_resource, int64_t max_resource, int64_t eta) : eta_(eta) {
  for (int64_t r = min_resource; r < max_resource; r *= eta) resources_.push_back(r);
  resources_.push_back(max_resource);
  rungs_.resize(resources_.size());
}

void AshaBracket::Admit(int64_t id) { rung_of_[id] = 0; }

Decision AshaBracket::OnReport(int64_t id, double loss, int64_t step, int64_t* resource) {
  size_t& k = rung_of_.at(id);
  *resource = resources_[k];
  if (step < resources_[k]) return Decision::kContinue;
  // Results stay sorted (loss, then trial id), so the top is a prefix.
  auto& results = rungs_[k].results;
  auto at =
      results.insert(std::lower_bound(results.begin(), results.end(), std::make_pair(loss, id)),
                     std::make_pair(loss, id));
  if (k + 1 == resources_.size()) return Decision::kStop;
  const size_t top = results.size() / static_cast<size_t>(eta_);
  if (static_cast<size_t>(at - results.begin()) >= top) return Decision::kPause;
  rungs_[k].promoted.insert(id);
  *resource = resources_[++k];
  return Decision::kContinue;
}

std::optional<std::pair<int64_t, int64_t>> AshaBracket::Promotable(
    const std::vector<TrialRecord>& trials) const {
  for (size_t k = rungs_.size() - 1; k-- > 0;) {
    const auto& sorted = rungs_[k].results;
    size_t top = sorted.size() / static_cast<size_t>(eta_);
    for (size_t j = 0; j < top; ++j) {
      int64_t id = sorted[j].second;
      if (!rungs_[k].promoted.count(id) && trials[id].state == TrialState::kPaused) {
        return std::make_pair(id, resources_[k + 1]);
      }
    }
  }
  return std::nullopt;
}

void AshaBracket::Promote(int64_t id) {
  size_t& k = rung_of_.at(id);
  rungs_[k].promoted.insert(id);
  ++k;
}

namespace {

class Asha : public Algorithm {
 public:
  Asha(std::unique_ptr<Sampler> sampler, const Budget& budget, double sign)
      : sampler_(std::move(sampler)),
        budget_(budget),
        sign_(sign),
        bracket_(budget.min_resource, budget.max_resource, budget.reduction) {}

  std::optional<Trial> Next(std::vector<TrialRecord>& trials, int64_t next_id) override {
    if (auto promote = bracket_.Promotable(trials)) {
      bracket_.Promote(promote->first);
      Trial t = trials[promote->first].trial;
      t.resource = promote->second;
      t.resumed = true;
      return t;
    }
    if (static_cast<int64_t>(trials.size()) >= budget_.trials) return std::nullopt;
    std::optional<Params> params = sampler_->Sample(CompletedObservations(trials, sign_));
    if (!params) return std::nullopt;
    bracket_.Admit(next_id);
    Trial t;
    t.id = next_id;
    t.params = std::move(*params);
    t.resource = bracket_.resources()[0];
    return t;
  }

  bool CanStart(const std::vector<TrialRecord>& trials) const override {
    return static_cast<int64_t>(trials.size()) < budget_.trials ||
           bracket_.Promotable(trials).has_value();
  }

  Decision OnReport(std::vector<TrialRecord>&, TrialRecord& record, double loss,
                    int64_t step) override {
    Decision d = bracket_.OnReport(record.trial.id, loss, step, &record.trial.resource);
    if (d == Decision::kStop) record.state = TrialState::kCompleted;
    return d;
  }

  void AddTrials(int64_t more) override { budget_.trials += more; }

 private:
  std::unique_ptr<Sampler> sampler_;
  Budget budget_;
  double sign_;
  AshaBracket bracket_;
};

}  // namespace

std::unique_ptr<Algorithm> MakeAsha(std::unique_ptr<Sampler> sampler, const Budget& budget,
                                    double sign) {
  return std::make_unique<Asha>(std::move(sampler), budget, sign);
}

}  // namespace cohort::sweep
