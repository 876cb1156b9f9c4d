// The steps' graph: which step's output feeds which, checked for unknown
// inputs and cycles, and walked in an order where every input comes first.
#ifndef COHORT_PIPELINE_DAG_H_
#define COHORT_PIPELINE_DAG_H_

#include <string>
#include <vector>

#include "pipeline/spec.h"

namespace cohort::pipeline {

// An input naming no step, a step input whose step writes no output, or a
// cycle: refused with the spec's line and the step's name.
Status CheckGraph(const PipelineSpec& spec);

// Every step after the steps it reads (ties in spec order). `spec` passed CheckGraph.
std::vector<const StepSpec*> StepOrder(const PipelineSpec& spec);

// The steps that read `step`'s output, directly or not, in StepOrder.
std::vector<const StepSpec*> Downstream(const PipelineSpec& spec, const std::string& step);

}  // namespace cohort::pipeline

#endif  // COHORT_PIPELINE_DAG_H_
