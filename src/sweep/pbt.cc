// Population based training (Jaderberg et al. 2017): `concurrent` members
// train side by side; every min_resource steps a member in the bottom quarter
// of the population's latest results is stopped (exploit) and replaced by a
// new trial that starts from the checkpoint of a member of the top quarter
// with that member's values perturbed (explore): numbers times 0.8 or 1.2,
// categoricals redrawn with probability 0.25.
#include <algorithm>
#include <cmath>
#include <deque>

#include "sweep/algorithm.h"

namespace cohort::sweep {

namespace {

constexpr double kQuantile = 0.25;
constexpr double kResampleProbability = 0.25;

class Pbt : public Algorithm {
 public:
  Pbt(const Space& space, std::unique_ptr<Sampler> sampler, const Budget& budget, double sign,
      uint64_t seed)
      : space_(space), sampler_(std::move(sampler)), budget_(budget), sign_(sign), rng_(seed) {}

  std::optional<Trial> Next(std::vector<TrialRecord>& trials, int64_t next_id) override {
    if (static_cast<int64_t>(trials.size()) >= budget_.trials) return std::nullopt;
    Trial t;
    t.id = next_id;
    t.resource = budget_.max_resource;
    if (!pending_.empty()) {
      t = pending_.front();
      pending_.pop_front();
      t.id = next_id;
      return t;
    }
    if (started_ >= budget_.concurrent) return std::nullopt;
    std::optional<Params> params = sampler_->Sample(CompletedObservations(trials, sign_));
    if (!params) return std::nullopt;
    ++started_;
    t.params = std::move(*params);
    return t;
  }

  bool CanStart(const std::vector<TrialRecord>& trials) const override {
    if (static_cast<int64_t>(trials.size()) >= budget_.trials) return false;
    return !pending_.empty() || started_ < budget_.concurrent;
  }

  Decision OnReport(std::vector<TrialRecord>& trials, TrialRecord& record, double loss,
                    int64_t step) override {
    latest_[record.trial.id] = loss;
    if (step >= budget_.max_resource) {
      record.state = TrialState::kCompleted;
      return Decision::kStop;
    }
    if (step < record.trial.start_step + budget_.min_resource || step % budget_.min_resource != 0 ||
        static_cast<int64_t>(trials.size() + pending_.size()) >= budget_.trials) {
      return Decision::kContinue;
    }
    // The running members ranked by their latest result, best first.
    std::vector<std::pair<double, int64_t>> ranked;
    for (const TrialRecord& r : trials) {
      if (r.state != TrialState::kRunning) continue;
      auto it = latest_.find(r.trial.id);
      // A member without a result yet has just started: wait for it.
      if (it == latest_.end()) return Decision::kContinue;
      ranked.emplace_back(it->second, r.trial.id);
    }
    if (ranked.size() < 2) return Decision::kContinue;
    std::sort(ranked.begin(), ranked.end());
    size_t q = std::max<size_t>(1, static_cast<size_t>(std::floor(kQuantile * ranked.size())));
    bool bottom = false;
    for (size_t j = ranked.size() - q; j < ranked.size(); ++j)
      bottom |= ranked[j].second == record.trial.id;
    if (!bottom) return Decision::kContinue;
    const TrialRecord& source = trials[ranked[rng_() % q].second];
    Trial t;
    t.params = Perturb(source.trial.params);
    t.resource = budget_.max_resource;
    t.clone_of = source.trial.id;
    t.start_step = source.last_step;
    pending_.push_back(std::move(t));
    return Decision::kStop;
  }

  void AddTrials(int64_t more) override { budget_.trials += more; }

 private:
  Params Perturb(const Params& from) {
    Params out;
    for (size_t i = 0; i < space_.size(); ++i) {
      if (!space_.Active(i, out)) continue;
      const ParamSpec& p = space_.params()[i];
      auto it = from.find(p.name);
      double u = Uniform01(rng_);
      if (it == from.end() || (space_.Categorical(i) && u < kResampleProbability)) {
        out[p.name] = space_.FromUnit(i, Uniform01(rng_));  // newly active, or redrawn
        continue;
      }
      if (space_.Categorical(i)) {
        out[p.name] = it->second;
        continue;
      }
      double factor = u < 0.5 ? 0.8 : 1.2;
      double v = std::holds_alternative<int64_t>(it->second)
                     ? static_cast<double>(std::get<int64_t>(it->second))
                     : std::get<double>(it->second);
      double x = p.log ? std::log(v * factor) : v * factor;
      out[p.name] = space_.Decode(i, std::clamp(x, space_.Lower(i), space_.Upper(i)));
    }
    return out;
  }

  Space space_;
  std::unique_ptr<Sampler> sampler_;
  Budget budget_;
  double sign_;
  std::mt19937_64 rng_;
  int64_t started_ = 0;
  std::deque<Trial> pending_;
  std::map<int64_t, double> latest_;
};

}  // namespace

std::unique_ptr<Algorithm> MakePbt(const Space& space, std::unique_ptr<Sampler> sampler,
                                   const Budget& budget, double sign, uint64_t seed) {
  return std::make_unique<Pbt>(space, std::move(sampler), budget, sign, seed);
}

}  // namespace cohort::sweep
