// The pipeline controller (`cohort pipeline run`): walks the steps in graph
// order; for each, resolves its inputs to commits, skips it when its cache
// key matches the last run's or a cached one's, else plans the datums to
// process (all of them, or only those the split input's commit added or
// changed since the last run), runs them in batches as queue jobs, retries
// failed batches, then isolates and reports a datum that keeps failing, and
// finally commits the step's output: the previous output minus the results
// of removed and changed datums plus the new results, with provenance.
// Every change is saved to the state folder first (state.h), so a stopped
// or killed controller resumes where it was.
#ifndef COHORT_PIPELINE_CONTROLLER_H_
#define COHORT_PIPELINE_CONTROLLER_H_

#include <string>

#include "cohort/status.h"
#include "pipeline/spec.h"

namespace cohort::pipeline {

struct ControllerOptions {
  std::string state_folder;
  std::string server;   // the queue's URL; empty: COHORT_SERVER
  bool force = false;   // re-run every step from nothing
  double poll_s = 0.1;  // between two looks at the jobs
};

// The default state folder: SPEC's folder/.cohort-pipeline/NAME.
std::string DefaultStateFolder(const PipelineSpec& spec);

// Runs the pipeline to the end. 0: every datum of every step done; 1: some
// datums failed (each reported by id; the others' results are committed);
// 3: stopped by SIGINT/SIGTERM (the same command resumes). An error is a
// step that cannot run at all (an input that does not resolve, the queue
// unreachable, a step output that is no dataset), naming the step.
Result<int> RunPipeline(const PipelineSpec& spec, const ControllerOptions& options);

// `cohort pipeline watch`: runs the pipeline, then again each time a
// dataset input's ref moves to a new commit (looked at every `every_s`),
// until SIGINT/SIGTERM. Returns the last run's status.
Result<int> WatchPipeline(const PipelineSpec& spec, const ControllerOptions& options,
                          double every_s);

}  // namespace cohort::pipeline

#endif  // COHORT_PIPELINE_CONTROLLER_H_
