// Batch, key and name validation shared by every store.
#include "track/validation.h"

#include <algorithm>

namespace cohort::track {
namespace {

std::string Shown(const std::string& value) {
  // Appended piece by piece: "'" + value trips GCC 12's -Wrestrict false positive.
  std::string out = "'";
  out.append(value, 0, std::min<size_t>(value.size(), 100));
  out += "'";
  if (value.size() > 100) out += "... (" + std::to_string(value.size()) + " bytes)";
  return out;
}

Status CheckLength(const std::string& field, const std::string& value, size_t limit) {
  if (value.size() > limit) {
    return Status::InvalidArgument("Invalid value " + Shown(value) + " for parameter '" + field +
                                   "' supplied: length " + std::to_string(value.size()) +
                                   " exceeds the limit of " + std::to_string(limit));
  }
  return Status::OK();
}

// As the REST layer words it (server/request_fields.cc).
Status MissingField(const std::string& field) {
  return Status::InvalidArgument("Missing value for required parameter '" + field +
                                 "'. See the API docs for more information about request "
                                 "parameters.");
}

}  // namespace

namespace {

// The common case, checked without building any message.
bool KeyLooksFine(const std::string& key) {
  if (key.empty() || key.size() > kMaxKeyLength || key.front() == '/') return false;
  for (char c : key) {
    if (static_cast<unsigned char>(c) < 0x20) return false;
  }
  return key.find("..") == std::string::npos;
}

}  // namespace

Status ValidateKey(const std::string& field, const std::string& key) {
  if (KeyLooksFine(key)) return Status::OK();
  if (key.empty()) {
    return Status::InvalidArgument("Missing value for required parameter '" + field + "'");
  }
  COHORT_RETURN_IF_ERROR(CheckLength(field, key, kMaxKeyLength));
  bool bad_path = key.front() == '/' || key == ".." || key.rfind("../", 0) == 0 ||
                  key.find("/../") != std::string::npos ||
                  (key.size() >= 3 && key.compare(key.size() - 3, 3, "/..") == 0);
  for (char c : key) {
    if (static_cast<unsigned char>(c) < 0x20) bad_path = true;
  }
  if (bad_path) {
    return Status::InvalidArgument("Invalid value " + Shown(key) + " for parameter '" + field +
                                   "' supplied: names may not be absolute, contain '..' "
                                   "components or control characters");
  }
  return Status::OK();
}

Status ValidateBatchSizes(size_t metrics, size_t params, size_t tags) {
  auto limit = [](size_t got, size_t max, const char* what) {
    return Status::InvalidArgument("A batch logging request can contain at most " +
                                   std::to_string(max) + " " + what + ". Got " +
                                   std::to_string(got) + " " + what + ". Please split up " + what +
                                   " across multiple requests and try again.");
  };
  if (metrics > kMaxBatchMetrics) return limit(metrics, kMaxBatchMetrics, "metrics");
  if (params > kMaxBatchParams) return limit(params, kMaxBatchParams, "params");
  if (tags > kMaxBatchTags) return limit(tags, kMaxBatchTags, "tags");
  if (metrics + params + tags > kMaxBatchItems) {
    return limit(metrics + params + tags, kMaxBatchItems, "items");
  }
  return Status::OK();
}

Status ValidateBatch(const Batch& batch) {
  COHORT_RETURN_IF_ERROR(
      ValidateBatchSizes(batch.metrics.size(), batch.params.size(), batch.tags.size()));
  for (size_t i = 0; i < batch.metrics.size(); ++i) {
    if (KeyLooksFine(batch.metrics[i].key)) continue;  // no field name to build
    COHORT_RETURN_IF_ERROR(
        ValidateKey("metrics[" + std::to_string(i) + "].key", batch.metrics[i].key));
  }
  for (size_t i = 0; i < batch.params.size(); ++i) {
    std::string field = "params[" + std::to_string(i) + "]";
    COHORT_RETURN_IF_ERROR(ValidateKey(field + ".key", batch.params[i].key));
    COHORT_RETURN_IF_ERROR(
        CheckLength(field + ".value", batch.params[i].value, kMaxParamValueLength));
  }
  for (size_t i = 0; i < batch.tags.size(); ++i) {
    std::string field = "tags[" + std::to_string(i) + "]";
    COHORT_RETURN_IF_ERROR(ValidateKey(field + ".key", batch.tags[i].key));
    COHORT_RETURN_IF_ERROR(CheckLength(field + ".value", batch.tags[i].value, kMaxTagValueLength));
  }
  return Status::OK();
}

Status ValidateDatasetInputs(const std::vector<DatasetInput>& inputs) {
  if (inputs.size() > kMaxDatasetsPerCall) {
    return Status::InvalidArgument("A run can log at most " + std::to_string(kMaxDatasetsPerCall) +
                                   " datasets in one call, but got " +
                                   std::to_string(inputs.size()) + " in 'datasets'");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string field = "datasets[" + std::to_string(i) + "]";
    const Dataset& d = inputs[i].dataset;
    struct Check {
      const char* name;
      const std::string& value;
      size_t limit;
      bool required;
    };
    for (const Check& c : {Check{"name", d.name, kMaxDatasetNameLength, true},
                           Check{"digest", d.digest, kMaxDatasetDigestLength, true},
                           Check{"source_type", d.source_type, kMaxDatasetSourceLength, true},
                           Check{"source", d.source, kMaxDatasetSourceLength, true},
                           Check{"schema", d.schema, kMaxDatasetSchemaLength, false},
                           Check{"profile", d.profile, kMaxDatasetProfileLength, false}}) {
      std::string name = field + ".dataset." + c.name;
      if (c.required && c.value.empty()) {
        return MissingField(name);
      }
      COHORT_RETURN_IF_ERROR(CheckLength(name, c.value, c.limit));
    }
    for (size_t t = 0; t < inputs[i].tags.size(); ++t) {
      std::string tag = field + ".tags[" + std::to_string(t) + "]";
      const Tag& input_tag = inputs[i].tags[t];
      if (input_tag.key.empty()) {
        return MissingField(tag + ".key");
      }
      COHORT_RETURN_IF_ERROR(CheckLength(tag + ".key", input_tag.key, kMaxInputTagKeyLength));
      COHORT_RETURN_IF_ERROR(CheckLength(tag + ".value", input_tag.value, kMaxInputTagValueLength));
    }
  }
  return Status::OK();
}

Status ValidateRunStatus(const std::string& status) {
  if (status == "RUNNING" || status == "SCHEDULED" || status == "FINISHED" || status == "FAILED" ||
      status == "KILLED") {
    return Status::OK();
  }
  return Status::InvalidArgument("Invalid value " + Shown(status) +
                                 " for parameter 'status' supplied: expected RUNNING, "
                                 "SCHEDULED, FINISHED, FAILED or KILLED");
}

Status ValidateExperimentName(const std::string& name) {
  if (name.empty()) {
    return Status::InvalidArgument("Missing value for required parameter 'name'");
  }
  return CheckLength("name", name, 500);
}

}  // namespace cohort::track
