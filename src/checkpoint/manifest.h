// A checkpoint's manifest: the small text object whose presence makes the
// checkpoint exist, naming its state object, size, SHA-256, step and metric.
#ifndef COHORT_CHECKPOINT_MANIFEST_H_
#define COHORT_CHECKPOINT_MANIFEST_H_

#include <string>
#include <string_view>

#include "cohort/checkpoint.h"
#include "cohort/status.h"

namespace cohort::checkpoint {

struct Manifest {
  CheckpointInfo info;
  std::string state_object;  // key of the state, relative to the store
};

// "step-000000000042": the folder of one step's objects (sorts by step).
std::string StepFolder(int64_t step);
// "step-000000000042/MANIFEST".
std::string ManifestKey(int64_t step);
// The step of a "step-N/MANIFEST" key; -1 for any other key.
int64_t StepOfManifestKey(std::string_view key);

std::string FormatManifest(const Manifest& manifest);
// Errors name `where` (the manifest's location) and the bad line.
Result<Manifest> ParseManifest(std::string_view text, const std::string& where);

}  // namespace cohort::checkpoint

#endif  // COHORT_CHECKPOINT_MANIFEST_H_
