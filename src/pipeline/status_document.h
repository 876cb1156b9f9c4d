// A pipeline's status document: the spec's graph with each step's state
// (waiting, running, done, failed, cached, broken), its datums' progress,
// its failed datums, queue jobs and output commit, the pipeline's own
// state, and the provenance records of its latest output commits (so the
// dashboard can walk provenance back without reading the datasets). `cohort pipeline status --json`
// prints it, and the controller posts it to the server (status_poster.h) for the dashboard's DAG
// view (docs/pipelines.md, "Dashboard").
#ifndef COHORT_PIPELINE_STATUS_DOCUMENT_H_
#define COHORT_PIPELINE_STATUS_DOCUMENT_H_

#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/spec.h"

namespace cohort::pipeline {

// `state` is the controller's state.json (state.h); `output_records` the
// provenance records of its latest output commits (state.h's
// RecentOutputRecords), carried as "commits"; `controller_pid` the pid of
// the running controller, 0 when none runs.
nlohmann::json StatusDocument(const PipelineSpec& spec, const nlohmann::json& state,
                              const std::vector<nlohmann::json>& output_records,
                              int controller_pid);

}  // namespace cohort::pipeline

#endif  // COHORT_PIPELINE_STATUS_DOCUMENT_H_
