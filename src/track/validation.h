// Input checks every store applies before writing, with MLflow's limits and
// messages that name the offending field ("metrics[3].key").
#ifndef COHORT_TRACK_VALIDATION_H_
#define COHORT_TRACK_VALIDATION_H_

#include <string>

#include "cohort/status.h"
#include "track/store.h"

namespace cohort::track {

// A metric/param/tag name: non-empty, at most kMaxKeyLength bytes, no "..",
// not absolute, printable.
Status ValidateKey(const std::string& field, const std::string& key);
// MLflow's count limits alone, checked before a request's items are parsed.
Status ValidateBatchSizes(size_t metrics, size_t params, size_t tags);
Status ValidateBatch(const Batch& batch);
// runs/log-inputs: counts, required fields and MLflow's lengths, naming the
// field as the request does ("datasets[2].dataset.digest").
Status ValidateDatasetInputs(const std::vector<DatasetInput>& inputs);
Status ValidateRunStatus(const std::string& status);
Status ValidateExperimentName(const std::string& name);

}  // namespace cohort::track

#endif  // COHORT_TRACK_VALIDATION_H_
