// The rungs of asynchronous successive halving (Li et al. 2018, "A System for
// Massively Parallel Hyperparameter Tuning"), with pause and resume: a trial
// that reaches a rung's resource is promoted at once when it is in the top
// 1/eta of that rung's results so far, else paused; a paused trial is resumed
// (from its own checkpoint) as soon as later results put it in the top 1/eta.
// ASHA is one bracket; Hyperband runs several with different first rungs.
#ifndef COHORT_SWEEP_ASHA_H_
#define COHORT_SWEEP_ASHA_H_

#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "cohort/sweep.h"

namespace cohort::sweep {

class AshaBracket {
 public:
  // Rung resources min, min*eta, min*eta^2, ... and max_resource last.
  AshaBracket(int64_t min_resource, int64_t max_resource, int64_t eta);

  const std::vector<int64_t>& resources() const { return resources_; }
  // Registers a new trial, heading for the first rung.
  void Admit(int64_t id);
  bool Contains(int64_t id) const { return rung_of_.count(id) > 0; }
  // Records a result at `step`. Sets *resource to the trial's next target.
  // kContinue (not at a rung yet, or promoted at once), kPause, or kStop when
  // the last rung is reached (the trial is complete).
  Decision OnReport(int64_t id, double loss, int64_t step, int64_t* resource);
  // The paused trial to promote next (highest rung first, best result first)
  // and the resource it is resumed to; std::nullopt when none qualifies.
  std::optional<std::pair<int64_t, int64_t>> Promotable(
      const std::vector<TrialRecord>& trials) const;
  void Promote(int64_t id);

 private:
  struct Rung {
    std::vector<std::pair<double, int64_t>> results;  // (loss, trial id), sorted
    std::set<int64_t> promoted;
  };

  int64_t eta_;
  std::vector<int64_t> resources_;
  std::vector<Rung> rungs_;
  std::map<int64_t, size_t> rung_of_;  // the rung each trial is heading for
};

}  // namespace cohort::sweep

#endif  // COHORT_SWEEP_ASHA_H_
