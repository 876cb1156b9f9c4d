// One step's batches of datums as queue jobs: submitted up to the
// pipeline's `parallel` limit (shared by the steps running at once), followed by polling, retried,
// split into single datums when a batch keeps failing, so the datum that fails is reported by id.
// Batches live in the step's run record (state.json) and every change is saved before the next, so
// a restarted controller adopts the jobs it had submitted.
#ifndef COHORT_PIPELINE_STEP_JOBS_H_
#define COHORT_PIPELINE_STEP_JOBS_H_

#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "cohort/status.h"
#include "pipeline/spec.h"
#include "queue/queue_client.h"

namespace cohort::pipeline {

struct StepJobsContext {
  const PipelineSpec* spec = nullptr;
  const StepSpec* step = nullptr;
  std::string staging_folder;              // staging datasets go below it
  std::map<std::string, std::string> env;  // added to the controller's for each job
  double poll_s = 0.1;
  std::function<Status()> save;    // persists the run record
  std::function<bool()> stopping;  // a stop was asked for
  // Jobs the pipeline's other steps have in flight (`parallel` bounds them all).
  std::function<int()> others_running = [] { return 0; };
  // Waits `seconds` between two looks at the jobs (the controller lets other
  // steps run meanwhile).
  std::function<void(double seconds)> wait;
};

// Runs the batches of `run` (its "batches" array) until each is done or
// failed; returns early, with every job left running, when stopping() says so.
Status RunBatches(const StepJobsContext& context, queue::QueueClient& client, nlohmann::json& run);

}  // namespace cohort::pipeline

#endif  // COHORT_PIPELINE_STEP_JOBS_H_
