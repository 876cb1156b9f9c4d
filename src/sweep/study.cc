// Study: the trial records, the checks on every call, and the choice of
// algorithm and sampler from StudyOptions.
#include <cmath>

#include "sweep/algorithm.h"
#include "sweep/algorithm_registry.h"

namespace cohort::sweep {

const char* DecisionName(Decision decision) {
  switch (decision) {
    case Decision::kContinue:
      return "continue";
    case Decision::kPause:
      return "pause";
    case Decision::kStop:
      return "stop";
  }
  return "?";
}

const char* TrialStateName(TrialState state) {
  switch (state) {
    case TrialState::kRunning:
      return "running";
    case TrialState::kPaused:
      return "paused";
    case TrialState::kCompleted:
      return "completed";
    case TrialState::kStopped:
      return "stopped";
    case TrialState::kFailed:
      return "failed";
  }
  return "?";
}

namespace {

Status CheckBudget(const StudyOptions& o) {
  const Budget& b = o.budget;
  if (b.trials < 1)
    return Status::InvalidArgument("budget.trials must be >= 1, got " + std::to_string(b.trials));
  if (b.concurrent < 1) {
    return Status::InvalidArgument("budget.concurrent must be >= 1, got " +
                                   std::to_string(b.concurrent));
  }
  if (b.min_resource < 1) {
    return Status::InvalidArgument("budget.min_resource must be >= 1, got " +
                                   std::to_string(b.min_resource));
  }
  if (b.max_resource < b.min_resource) {
    return Status::InvalidArgument("budget.max_resource (" + std::to_string(b.max_resource) +
                                   ") < budget.min_resource (" + std::to_string(b.min_resource) +
                                   ")");
  }
  const AlgorithmEntry* algorithm = FindSweepAlgorithm(o.algorithm);
  if (algorithm != nullptr && algorithm->has_rungs && b.reduction < 2) {
    return Status::InvalidArgument("budget.reduction must be >= 2, got " +
                                   std::to_string(b.reduction));
  }
  if (algorithm != nullptr && algorithm->needs_population && b.concurrent < 2) {
    return Status::InvalidArgument("pbt needs a population: budget.concurrent must be >= 2");
  }
  return Status::OK();
}

Result<std::unique_ptr<Sampler>> MakeSampler(const std::string& name, const StudyOptions& o,
                                             const Space& space) {
  const AlgorithmEntry* entry = FindSweepAlgorithm(name);
  if (entry == nullptr || entry->make_sampler == nullptr) {
    std::string samplers;
    for (const AlgorithmEntry& e : SweepAlgorithms()) {
      if (e.make_sampler != nullptr)
        samplers += (samplers.empty() ? "" : ", ") + std::string(e.name);
    }
    return Status::InvalidArgument("unknown sampler '" + name + "' (" + samplers + ")");
  }
  return entry->make_sampler(space, o);
}

class StudyImpl : public Study {
 public:
  StudyImpl(std::unique_ptr<Algorithm> algorithm, bool maximize)
      : algorithm_(std::move(algorithm)), maximize_(maximize) {}

  std::optional<Trial> Ask() override {
    std::optional<Trial> t = algorithm_->Next(trials_, static_cast<int64_t>(trials_.size()));
    if (!t) return std::nullopt;
    if (t->id == static_cast<int64_t>(trials_.size())) {
      TrialRecord r;
      r.trial = *t;
      trials_.push_back(std::move(r));
    } else {
      TrialRecord& r = trials_[t->id];
      r.trial.resource = t->resource;
      r.trial.resumed = true;
      r.state = TrialState::kRunning;
    }
    return t;
  }

  Result<Decision> Report(int64_t id, double value, int64_t step) override {
    Result<TrialRecord*> r = Running(id, "report");
    if (!r.ok()) return r.status();
    if (!std::isfinite(value)) {
      return Status::InvalidArgument("trial " + std::to_string(id) +
                                     ": reported value is not finite");
    }
    if (step < 0) {
      return Status::InvalidArgument("trial " + std::to_string(id) + ": step must be >= 0, got " +
                                     std::to_string(step));
    }
    TrialRecord& rec = **r;
    rec.value = value;
    rec.last_step = step;
    Decision d = algorithm_->OnReport(trials_, rec, maximize_ ? -value : value, step);
    if (d == Decision::kPause) rec.state = TrialState::kPaused;
    if (d == Decision::kStop && rec.state == TrialState::kRunning) rec.state = TrialState::kStopped;
    if (rec.state == TrialState::kCompleted) algorithm_->OnFinished(rec);
    return d;
  }

  Status Tell(int64_t id, double value) override {
    if (id < 0 || id >= static_cast<int64_t>(trials_.size())) return Unknown(id);
    TrialRecord& rec = trials_[id];
    if (rec.state == TrialState::kCompleted || rec.state == TrialState::kStopped) {
      return Status::OK();  // already ended by a report; its result stands
    }
    if (rec.state == TrialState::kFailed) {
      return Status::InvalidArgument("trial " + std::to_string(id) +
                                     " has failed; it cannot be told a value");
    }
    if (!std::isfinite(value)) {
      return Status::InvalidArgument("trial " + std::to_string(id) + ": told value is not finite");
    }
    rec.state = TrialState::kCompleted;
    rec.value = value;
    algorithm_->OnFinished(rec);
    return Status::OK();
  }

  Status Fail(int64_t id, const std::string& error) override {
    if (id < 0 || id >= static_cast<int64_t>(trials_.size())) return Unknown(id);
    TrialRecord& rec = trials_[id];
    rec.state = TrialState::kFailed;
    rec.error = error;
    algorithm_->OnFinished(rec);
    return Status::OK();
  }

  void AddTrials(int64_t more) override { algorithm_->AddTrials(more); }

  bool Finished() const override {
    for (const TrialRecord& r : trials_) {
      if (r.state == TrialState::kRunning) return false;
    }
    return !algorithm_->CanStart(trials_);
  }

  const std::vector<TrialRecord>& Trials() const override { return trials_; }

  std::optional<TrialRecord> Best() const override {
    const TrialRecord* best = nullptr;
    for (const TrialRecord& r : trials_) {
      if (r.state != TrialState::kCompleted || !r.value) continue;
      if (!best || (maximize_ ? *r.value > *best->value : *r.value < *best->value)) best = &r;
    }
    if (!best) return std::nullopt;
    return *best;
  }

 private:
  Status Unknown(int64_t id) const {
    return Status::InvalidArgument("unknown trial " + std::to_string(id) + " (the study has " +
                                   std::to_string(trials_.size()) + " trials)");
  }

  Result<TrialRecord*> Running(int64_t id, const char* what) {
    if (id < 0 || id >= static_cast<int64_t>(trials_.size())) return Unknown(id);
    TrialRecord& rec = trials_[id];
    if (rec.state != TrialState::kRunning) {
      return Status::InvalidArgument(std::string("cannot ") + what + " on trial " +
                                     std::to_string(id) + ": it is " + TrialStateName(rec.state));
    }
    return &rec;
  }

  std::unique_ptr<Algorithm> algorithm_;
  bool maximize_;
  std::vector<TrialRecord> trials_;
};

}  // namespace

Result<std::unique_ptr<Study>> Study::Create(const StudyOptions& options) {
  Result<Space> space = Space::Create(options.space);
  if (!space.ok()) return space.status();
  COHORT_RETURN_IF_ERROR(CheckBudget(options));
  const std::string& a = options.algorithm;
  const double sign = options.maximize ? -1.0 : 1.0;
  const AlgorithmEntry* entry = FindSweepAlgorithm(a);
  if (entry == nullptr) {
    return Status::InvalidArgument("unknown algorithm '" + a + "' (" + SweepAlgorithmList() + ")");
  }
  std::string sampler_name = entry->make != nullptr ? options.sampler : a;
  if (options.sobol && sampler_name == "random") sampler_name = "sobol";
  Result<std::unique_ptr<Sampler>> sampler = MakeSampler(sampler_name, options, *space);
  if (!sampler.ok()) return sampler.status();
  std::unique_ptr<Algorithm> algorithm =
      entry->make != nullptr ? entry->make(*space, std::move(*sampler), options, sign)
                             : MakeSamplerAlgorithm(std::move(*sampler), options.budget, sign);
  return std::unique_ptr<Study>(
      std::make_unique<StudyImpl>(std::move(algorithm), options.maximize));
}

}  // namespace cohort::sweep
