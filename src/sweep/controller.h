// `cohort sweep`: runs a sweep spec. Each trial is a job of `workers` ranks,
// started by a TrialExecutor (trial_executor.h): on this host through the
// launcher, or as a job of a `cohort server` queue; trials report through the
// ReportServer; every decision is in the journal before the trial hears it,
// so a controller killed at any moment and started again goes on where it
// was: finished trials are not re-run, trials that were running are started
// again (from their checkpoint_dir), and queue jobs that outlived the
// controller are followed again.
#ifndef COHORT_SWEEP_CONTROLLER_H_
#define COHORT_SWEEP_CONTROLLER_H_

#include <functional>
#include <memory>
#include <string>

#include "cohort/status.h"
#include "cohort/sweep.h"
#include "sweep/journal.h"
#include "sweep/trial_executor.h"
#include "sweep/trial_observer.h"

namespace cohort::sweep {

struct ControllerOptions {
  SweepSpec spec;
  std::string spec_text;     // for the journal's fingerprint
  std::string dir;           // the sweep's directory: journal, socket, trials/<id>/
  int64_t extend = 0;        // more trials than the spec's budget
  bool rerun_best = false;   // run the best finished trial's values once more, outside the study
  double trial_timeout = 0;  // seconds a trial's job may run; 0: no limit
  TrialObserverFactory observer;  // empty: nobody else hears of the trials
  TrialExecutorFactory executor;  // empty: trials run on this host (LocalTrialExecutor)
  // Opens the journal; empty: the file DIR/journal. `journal_name` names it
  // in messages.
  std::function<Result<std::unique_ptr<Journal>>()> journal;
  std::string journal_name;
};

// Runs the sweep until the study is finished (or it is told to stop with
// SIGINT/SIGTERM: running trials' jobs are stopped, or cancelled in the
// queue, and will be started again).
// Returns the exit status: 0 when it finished, 128+N on signal N.
Result<int> RunSweep(const ControllerOptions& options);

}  // namespace cohort::sweep

#endif  // COHORT_SWEEP_CONTROLLER_H_
