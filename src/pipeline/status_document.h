// A pipeline's status document: the spec's graph with each step's state
// (waiting, running, done, failed, cached, broken), its datums' progress,
// its failed datums, queue jobs and output commit, and the pipeline's own
// state. `cohort pipeline status --json` prints it, and the controller
// posts it to the server (status_poster.h) for the dashboard's DAG view
// (docs/pipelines.md, "Dashboard").
#ifndef COHORT_PIPELINE_STATUS_DOCUMENT_H_
#define COHORT_PIPELINE_STATUS_DOCUMENT_H_

#include <nlohmann/json.hpp>

#include "pipeline/spec.h"

namespace cohort::pipeline {

// `state` is the controller's state.json (state.h); `controller_pid` the
// pid of the running controller, 0 when none runs.
nlohmann::json StatusDocument(const PipelineSpec& spec, const nlohmann::json& state,
                              int controller_pid);

}  // namespace cohort::pipeline

#endif  // COHORT_PIPELINE_STATUS_DOCUMENT_H_
