// What the sweep controller tells an observer about its trials, so a sweep can
// be recorded elsewhere (the tracking store: sweep/tracking/tracked_sweep.h)
// without the controller knowing where. The journal stays the sweep's state.
#ifndef COHORT_SWEEP_TRIAL_OBSERVER_H_
#define COHORT_SWEEP_TRIAL_OBSERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/status.h"
#include "cohort/sweep.h"
#include "sweep/journal.h"

namespace cohort::sweep {

class TrialObserver {
 public:
  virtual ~TrialObserver() = default;
  // The trial's job starts: new, resumed from a pause, or started again after
  // the controller was stopped.
  virtual void Started(const TrialRecord& record) = 0;
  // Rank 0 reported these numbers (the metric and any others) at `step`.
  virtual void Reported(const TrialRecord& record, int64_t step,
                        const std::vector<std::pair<std::string, double>>& metrics) = 0;
  // The trial is now paused, completed, stopped or failed.
  virtual void Changed(const TrialRecord& record) = 0;
  // The controller ends: the sweep is `finished`, or it was told to stop.
  virtual void Closing(bool finished) = 0;
};

// Makes the observer once the journal is replayed: `records` are the
// journal's records so far and `trials` the study's trials after them; the
// observer may append its own records to `journal` ({"op":"run",...}: replay
// skips them).
using TrialObserverFactory = std::function<Result<std::unique_ptr<TrialObserver>>(
    const std::vector<std::string>& records, const std::vector<TrialRecord>& trials,
    Journal& journal)>;

}  // namespace cohort::sweep

#endif  // COHORT_SWEEP_TRIAL_OBSERVER_H_
