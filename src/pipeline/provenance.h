// Provenance: every output commit a pipeline makes carries a record (the
// pipeline, the step, the input commits, the code version, the parameters,
// the queue jobs) in its commit's `command` field, prefixed "cohort-pipeline ",
// so any copy of the dataset answers "what made this"; the controller also
// appends each record to its state's provenance.jsonl, which answers the
// forward question ("what was made from this commit").
#ifndef COHORT_PIPELINE_PROVENANCE_H_
#define COHORT_PIPELINE_PROVENANCE_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cohort/status.h"

namespace cohort::pipeline {

constexpr char kProvenancePrefix[] = "cohort-pipeline ";

// The git commit of the folder's checkout and the SHA-256 of `git diff HEAD`
// ({"git_commit": "", ...} outside a checkout).
nlohmann::json CodeVersion(const std::string& folder);

// The record in a commit's command field, nullopt when it holds none.
std::optional<nlohmann::json> RecordOfCommand(const std::string& command);

// Lines for `cohort pipeline provenance`: from LOCATION@REF back through each
// input commit with a record, to the raw data commits (which have none).
Result<std::vector<std::string>> Backward(const std::string& location, const std::string& ref);
// Lines: every recorded output made, directly or not, from location@commit,
// according to `records` (provenance.jsonl's lines).
std::vector<std::string> Forward(const std::vector<nlohmann::json>& records,
                                 const std::string& location, const std::string& commit);

}  // namespace cohort::pipeline

#endif  // COHORT_PIPELINE_PROVENANCE_H_
