// The tracking data model: experiments, runs and what a run logs (metrics,
// params, tags). Field names follow MLflow's service.proto so the REST layer
// maps them one to one.
#ifndef COHORT_TRACK_TYPES_H_
#define COHORT_TRACK_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cohort::track {

struct Tag {
  std::string key;
  std::string value;
};

struct Param {
  std::string key;
  std::string value;
};

struct Metric {
  std::string key;
  double value = 0;
  int64_t timestamp = 0;  // milliseconds since the epoch
  int64_t step = 0;
};

// "active" or "deleted", as MLflow's lifecycle_stage.
inline constexpr const char* kActive = "active";
inline constexpr const char* kDeleted = "deleted";

struct Experiment {
  std::string experiment_id;
  std::string name;
  std::string artifact_location;
  std::string lifecycle_stage = kActive;
  int64_t creation_time = 0;
  int64_t last_update_time = 0;
  std::vector<Tag> tags;
};

// What the dashboard's projects page shows of an experiment: its active
// runs by status and when anything in it last happened (a run started or
// ended, or a run's latest metric was logged), in ms since the epoch; 0 when
// it has no runs.
struct ExperimentActivity {
  std::string experiment_id;
  int64_t runs = 0;
  int64_t running = 0, finished = 0, failed = 0, killed = 0;
  int64_t last_activity_time = 0;
};

struct RunInfo {
  std::string run_id;
  std::string run_name;
  std::string experiment_id;
  std::string user_id;
  std::string status = "RUNNING";  // RUNNING SCHEDULED FINISHED FAILED KILLED
  int64_t start_time = 0;
  std::optional<int64_t> end_time;
  std::string artifact_uri;
  std::string lifecycle_stage = kActive;
};

// A dataset a run used (MLflow's Dataset). An experiment holds one dataset
// per (name, digest); schema and profile are optional ("" = absent).
struct Dataset {
  std::string name;
  std::string digest;
  std::string source_type;
  std::string source;
  std::string schema;
  std::string profile;
};

// A run's use of a dataset, with tags such as mlflow.data.context = "train".
struct DatasetInput {
  Dataset dataset;
  std::vector<Tag> tags;
};

struct Run {
  RunInfo info;
  std::vector<Metric> metrics;  // the latest value of each key
  std::vector<Param> params;
  std::vector<Tag> tags;
  std::vector<DatasetInput> inputs;  // by dataset name, then digest
};

// What search calls return: one page and the token of the next ("" at the end).
template <typename T>
struct Page {
  std::vector<T> items;
  std::string next_page_token;
};

// MLflow's ViewType.
enum class ViewType { kActiveOnly, kDeletedOnly, kAll };

struct RunSearch {
  std::vector<std::string> experiment_ids;
  std::string filter;  // MLflow filter grammar, "" = every run
  ViewType view = ViewType::kActiveOnly;
  int max_results = 1000;
  std::vector<std::string> order_by;  // "metrics.loss DESC", "attributes.start_time"
  std::string page_token;
};

struct ExperimentSearch {
  std::string filter;  // attribute.name / tags.<key> clauses
  ViewType view = ViewType::kActiveOnly;
  int max_results = 1000;
  std::vector<std::string> order_by;
  std::string page_token;
};

// A metric history reduced to at most `max_points` per run (min/max buckets).
struct HistoryPoint {
  std::string run_id;
  Metric metric;
};

// A pipeline's status document as its controller last put it (store.h).
struct PipelineStatusRecord {
  std::string name;
  std::string owner;        // the user who first put it ("" without --auth)
  std::string status;       // the JSON document
  int64_t update_time = 0;  // milliseconds since the epoch
};

}  // namespace cohort::track

#endif  // COHORT_TRACK_TYPES_H_
