// A sweep's trials as jobs of a `cohort server` queue (docs/sweeps.md,
// "Trials in the job queue"): each trial is a gang of `workers` slots running
// `cohort run -np WORKERS -- COMMAND` with the controller's environment and
// directory, at low priority by default. The controller follows the jobs
// through the queue's HTTP API (queue/queue_client.h); they outlive it, so
// the journal records each job and a restarted controller adopts them.
// In the command (like sweep/tracking/): it needs the queue client.
#ifndef COHORT_SWEEP_QUEUE_QUEUED_TRIALS_H_
#define COHORT_SWEEP_QUEUE_QUEUED_TRIALS_H_

#include <memory>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "sweep/trial_executor.h"

namespace cohort::sweep {

struct QueuedTrialsOptions {
  std::string server;            // the queue's URL (--queue)
  std::string priority = "low";  // high, normal or low
  std::string project;           // the jobs' project (the sweep's name unless given)
  int workers = 1;               // the gang: slots per trial
  std::vector<std::string> command;
  double trial_timeout = 0;  // the jobs' --max-time; 0: none
};

// Checks that the queue answers (a wrong URL, or a server without a queue,
// is refused before anything runs).
Result<std::unique_ptr<TrialExecutor>> QueuedTrialExecutor(const QueuedTrialsOptions& options);

}  // namespace cohort::sweep

#endif  // COHORT_SWEEP_QUEUE_QUEUED_TRIALS_H_
