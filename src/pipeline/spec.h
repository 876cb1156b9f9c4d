// The pipeline spec (docs/pipelines.md): named steps over dataset commits and
// other steps' outputs, read from YAML with errors that name the file, the
// line and the key ("p.yaml:7: steps[1].command: expected a list of words").
#ifndef COHORT_PIPELINE_SPEC_H_
#define COHORT_PIPELINE_SPEC_H_

#include <map>
#include <string>
#include <vector>

#include "cohort/status.h"

namespace cohort::pipeline {

// How an input is split into datums, each processed once per content.
enum class Glob {
  kWhole,   // the whole commit is one datum
  kSample,  // each sample is a datum ("file": one per file of an ingested imagefolder)
};

struct StepInput {
  std::string name;     // the step sees it as COHORT_INPUT_<NAME>
  std::string dataset;  // a dataset location (relative paths: from the spec's folder) ...
  std::string ref;      // ... at this ref (default "main")
  std::string step;     // ... or the output of this step
  Glob glob = Glob::kWhole;
  int line = 0;
};

struct StepSpec {
  std::string name;
  int line = 0;
  std::vector<StepInput> inputs;
  std::vector<std::string> command;
  std::map<std::string, std::string> params;  // COHORT_PARAM_<NAME> in the step's environment
  int slots = 1;                              // the queue job's gang
  int batch = 1;                              // datums per queue job
  int retries = 2;                            // extra attempts of a failed job
  std::string output;                         // the dataset the step's results go to
};

struct PipelineSpec {
  std::string name;
  std::string origin;  // the spec's file, for messages
  std::string folder;  // relative locations and the steps' working directory
  int parallel = 4;    // queue jobs in flight at once, all steps together
  std::vector<StepSpec> steps;

  const StepSpec* Find(const std::string& step) const;
  // The step's split input, or nullptr when every input is whole.
  static const StepInput* SplitInput(const StepSpec& step);
};

// Parses and checks `yaml_text`; `origin` names it in errors, `folder`
// anchors relative dataset locations.
Result<PipelineSpec> ParseSpec(const std::string& yaml_text, const std::string& origin,
                               const std::string& folder);
Result<PipelineSpec> LoadSpec(const std::string& path);

}  // namespace cohort::pipeline

#endif  // COHORT_PIPELINE_SPEC_H_
