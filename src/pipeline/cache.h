// Step cache keys: what decides whether a step's earlier outputs can be
// reused (the key: every input's commit, the command, the parameters) and
// whether its earlier per-datum results can be kept while only new datums
// are processed (the datum key: the same without the split input's commit).
#ifndef COHORT_PIPELINE_CACHE_H_
#define COHORT_PIPELINE_CACHE_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cohort/status.h"
#include "pipeline/spec.h"

namespace cohort::pipeline {

// One input of one run of a step, resolved.
struct ResolvedInput {
  std::string name, location, commit;
  bool split = false;
};

// SHA-256 (hex) over the inputs' commits, the command and the parameters.
std::string CacheKey(const StepSpec& step, const std::vector<ResolvedInput>& inputs);
// As CacheKey, leaving out the split input's commit.
std::string DatumKey(const StepSpec& step, const std::vector<ResolvedInput>& inputs);

// Completed runs by key, one JSON file each under `folder` (the output
// commit and the per-datum results a later incremental run continues from).
class StepCache {
 public:
  explicit StepCache(std::string folder) : folder_(std::move(folder)) {}
  std::optional<nlohmann::json> Find(const std::string& key) const;
  Status Store(const std::string& key, const nlohmann::json& entry) const;

 private:
  std::string folder_;
};

}  // namespace cohort::pipeline

#endif  // COHORT_PIPELINE_CACHE_H_
