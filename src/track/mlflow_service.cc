// MLflow's endpoints over a TrackingStore: request fields in, store calls,
// MLflow JSON out.
#include "track/mlflow_service.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "track/validation.h"

namespace cohort::track {
namespace {

using nlohmann::json;

constexpr int kMaxSearchResults = 50000;
constexpr int kDefaultBulkResults = 320;
constexpr int kMaxBulkResults = 2500;
constexpr size_t kMaxBulkRuns = 100;

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// proto3 JSON writes non-finite doubles as strings.
json Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

json KeyValues(const auto& items) {
  json out = json::array();
  for (const auto& kv : items) out.push_back({{"key", kv.key}, {"value", kv.value}});
  return out;
}

json MetricJson(const Metric& m) {
  return {{"key", m.key}, {"value", Number(m.value)}, {"timestamp", m.timestamp}, {"step", m.step}};
}

json ExperimentJson(const Experiment& e) {
  json out = {{"experiment_id", e.experiment_id},         {"name", e.name},
              {"artifact_location", e.artifact_location}, {"lifecycle_stage", e.lifecycle_stage},
              {"last_update_time", e.last_update_time},   {"creation_time", e.creation_time}};
  if (!e.tags.empty()) out["tags"] = KeyValues(e.tags);
  return out;
}

json RunInfoJson(const RunInfo& i) {
  json out = {{"run_id", i.run_id},
              {"run_uuid", i.run_id},
              {"run_name", i.run_name},
              {"experiment_id", i.experiment_id},
              {"user_id", i.user_id},
              {"status", i.status},
              {"start_time", i.start_time},
              {"artifact_uri", i.artifact_uri},
              {"lifecycle_stage", i.lifecycle_stage}};
  if (i.end_time) out["end_time"] = *i.end_time;
  return out;
}

json RunJson(const Run& r) {
  json data = json::object();
  if (!r.metrics.empty()) {
    data["metrics"] = json::array();
    for (const Metric& m : r.metrics) data["metrics"].push_back(MetricJson(m));
  }
  if (!r.params.empty()) data["params"] = KeyValues(r.params);
  if (!r.tags.empty()) data["tags"] = KeyValues(r.tags);
  json inputs = json::object();
  for (const DatasetInput& input : r.inputs) {
    const Dataset& d = input.dataset;
    json dataset = {{"name", d.name},
                    {"digest", d.digest},
                    {"source_type", d.source_type},
                    {"source", d.source}};
    if (!d.schema.empty()) dataset["schema"] = d.schema;
    if (!d.profile.empty()) dataset["profile"] = d.profile;
    json item = {{"dataset", dataset}};
    if (!input.tags.empty()) item["tags"] = KeyValues(input.tags);
    inputs["dataset_inputs"].push_back(item);
  }
  return {{"info", RunInfoJson(r.info)}, {"data", data}, {"inputs", inputs}};
}

Result<ViewType> ParseViewType(const RequestFields& f, const std::string& name) {
  auto v = f.OptionalString(name);
  if (!v.ok()) return v.status();
  if (!v->has_value() || **v == "ACTIVE_ONLY" || **v == "1") return ViewType::kActiveOnly;
  if (**v == "DELETED_ONLY" || **v == "2") return ViewType::kDeletedOnly;
  if (**v == "ALL" || **v == "3") return ViewType::kAll;
  return Status::InvalidArgument("Invalid value '" + **v + "' for parameter '" + name +
                                 "' supplied: expected ACTIVE_ONLY, DELETED_ONLY or ALL");
}

Result<int> ParseMaxResults(const RequestFields& f, int default_value, int limit) {
  auto v = f.OptionalInt("max_results");
  if (!v.ok()) return v.status();
  int64_t n = v->value_or(default_value);
  if (n <= 0 || n > limit) {
    return Status::InvalidArgument("Invalid value " + std::to_string(n) +
                                   " for parameter 'max_results' supplied: it must be between "
                                   "1 and " +
                                   std::to_string(limit));
  }
  return static_cast<int>(n);
}

// run_id, or the deprecated run_uuid that old clients send.
Result<std::string> RunId(const RequestFields& f) {
  if (!f.Has("run_id") && f.Has("run_uuid")) return f.RequiredString("run_uuid");
  return f.RequiredString("run_id");
}

Result<std::vector<Tag>> Tags(const RequestFields& f, const std::string& name) {
  auto items = f.ObjectList(name);
  if (!items.ok()) return items.status();
  std::vector<Tag> out;
  for (const RequestFields& item : *items) {
    auto key = item.RequiredString("key");
    if (!key.ok()) return key.status();
    auto value = item.OptionalString("value");
    if (!value.ok()) return value.status();
    out.push_back({*key, value->value_or("")});
  }
  return out;
}

Result<Metric> ParseMetric(const RequestFields& f) {
  auto key = f.RequiredString("key");
  if (!key.ok()) return key.status();
  auto value = f.RequiredDouble("value");
  if (!value.ok()) return value.status();
  auto timestamp = f.RequiredInt("timestamp");
  if (!timestamp.ok()) return timestamp.status();
  auto step = f.OptionalInt("step");
  if (!step.ok()) return step.status();
  return Metric{*key, *value, *timestamp, step->value_or(0)};
}

using Action = std::function<Result<json>(TrackingStore&, const RequestFields&)>;

#define COHORT_ASSIGN(var, expr)                        \
  auto var##_result = (expr);                           \
  if (!var##_result.ok()) return var##_result.status(); \
  auto& var = *var##_result

Result<json> CreateExperiment(TrackingStore& store, const RequestFields& f) {
  COHORT_ASSIGN(name, f.RequiredString("name"));
  COHORT_ASSIGN(location, f.OptionalString("artifact_location"));
  COHORT_ASSIGN(tags, Tags(f, "tags"));
  COHORT_ASSIGN(id, store.CreateExperiment(name, location.value_or(""), tags));
  return json{{"experiment_id", id}};
}

Result<json> GetExperiment(TrackingStore& store, const RequestFields& f) {
  COHORT_ASSIGN(id, f.RequiredString("experiment_id"));
  COHORT_ASSIGN(e, store.GetExperiment(id));
  return json{{"experiment", ExperimentJson(e)}};
}

Result<json> GetExperimentByName(TrackingStore& store, const RequestFields& f) {
  COHORT_ASSIGN(name, f.RequiredString("experiment_name"));
  COHORT_ASSIGN(e, store.GetExperimentByName(name));
  return json{{"experiment", ExperimentJson(e)}};
}

// The paging and filtering fields both searches share (ExperimentSearch,
// RunSearch), in the order MLflow's handlers read them; `view_field` is the
// request's name for the view type.
template <typename Search>
Status ReadSearchFields(const RequestFields& f, const char* view_field, Search* search) {
  COHORT_ASSIGN(max, ParseMaxResults(f, 1000, kMaxSearchResults));
  COHORT_ASSIGN(filter, f.OptionalString("filter"));
  COHORT_ASSIGN(order, f.StringList("order_by"));
  COHORT_ASSIGN(token, f.OptionalString("page_token"));
  COHORT_ASSIGN(view, ParseViewType(f, view_field));
  search->max_results = max;
  search->filter = filter.value_or("");
  search->order_by = order;
  search->page_token = token.value_or("");
  search->view = view;
  return Status::OK();
}

Result<json> SearchExperiments(TrackingStore& store, const RequestFields& f) {
  ExperimentSearch search;
  COHORT_RETURN_IF_ERROR(ReadSearchFields(f, "view_type", &search));
  COHORT_ASSIGN(page, store.SearchExperiments(search));
  json out = {{"experiments", json::array()}};
  for (const Experiment& e : page.items) out["experiments"].push_back(ExperimentJson(e));
  if (!page.next_page_token.empty()) out["next_page_token"] = page.next_page_token;
  return out;
}

Result<json> UpdateExperiment(TrackingStore& store, const RequestFields& f) {
  COHORT_ASSIGN(id, f.RequiredString("experiment_id"));
  COHORT_ASSIGN(name, f.RequiredString("new_name"));
  COHORT_RETURN_IF_ERROR(store.RenameExperiment(id, name));
  return json::object();
}

Action ExperimentLifecycle(const char* stage) {
  return [stage](TrackingStore& store, const RequestFields& f) -> Result<json> {
    COHORT_ASSIGN(id, f.RequiredString("experiment_id"));
    COHORT_RETURN_IF_ERROR(store.SetExperimentLifecycle(id, stage));
    return json::object();
  };
}

Result<json> SetExperimentTag(TrackingStore& store, const RequestFields& f) {
  COHORT_ASSIGN(id, f.RequiredString("experiment_id"));
  COHORT_ASSIGN(key, f.RequiredString("key"));
  COHORT_ASSIGN(value, f.OptionalString("value"));
  COHORT_RETURN_IF_ERROR(store.SetExperimentTag(id, {key, value.value_or("")}));
  return json::object();
}

// The experiment named `name`, created when missing (by another client at
// the same moment is fine).
Result<std::string> ExperimentNamed(TrackingStore& store, const std::string& name) {
  auto found = store.GetExperimentByName(name);
  if (found.ok()) return found->experiment_id;
  auto made = store.CreateExperiment(name, "", {});
  if (made.ok() || !made.status().IsAlreadyExists()) return made;
  COHORT_ASSIGN(again, store.GetExperimentByName(name));
  return again.experiment_id;
}

// A run id a client made: what the store makes, 32 lowercase hex digits.
bool IsClientRunId(const std::string& id) {
  return id.size() == 32 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// MLflow's runs/create, and cohort's extension for a client that started its
// run while the server was down and sends the request from its spool
// (docs/tracking.md): `cohort_run_id`, the id it made, and
// `cohort_experiment_name` (created when missing) in place of
// `experiment_id`. The same request again (a spool replayed twice) answers
// the run it made.
Result<json> CreateRun(TrackingStore& store, const RequestFields& f) {
  COHORT_ASSIGN(experiment, f.OptionalString("experiment_id"));
  COHORT_ASSIGN(experiment_name, f.OptionalString("cohort_experiment_name"));
  COHORT_ASSIGN(given_id, f.OptionalString("cohort_run_id"));
  COHORT_ASSIGN(user, f.OptionalString("user_id"));
  COHORT_ASSIGN(start, f.OptionalInt("start_time"));
  COHORT_ASSIGN(name, f.OptionalString("run_name"));
  COHORT_ASSIGN(tags, Tags(f, "tags"));
  std::string experiment_id = experiment.value_or("0");
  if (!experiment && experiment_name) {
    COHORT_ASSIGN(named, ExperimentNamed(store, *experiment_name));
    experiment_id = named;
  }
  if (given_id) {
    if (!IsClientRunId(*given_id)) {
      return Status::InvalidArgument("Invalid value '" + *given_id +
                                     "' for parameter 'cohort_run_id' supplied: it must be 32 "
                                     "lowercase hex digits");
    }
    auto existing = store.GetRun(*given_id);
    if (existing.ok()) {
      if (existing->info.experiment_id != experiment_id) {
        return Status::AlreadyExists("Run '" + *given_id + "' already exists");
      }
      return json{{"run", RunJson(*existing)}};
    }
  }
  COHORT_ASSIGN(run, store.CreateRun(experiment_id, user.value_or(""), start.value_or(NowMillis()),
                                     name.value_or(""), tags, given_id.value_or("")));
  return json{{"run", RunJson(run)}};
}

Result<json> GetRun(TrackingStore& store, const RequestFields& f) {
  COHORT_ASSIGN(id, RunId(f));
  COHORT_ASSIGN(run, store.GetRun(id));
  return json{{"run", RunJson(run)}};
}

Result<json> UpdateRun(TrackingStore& store, const RequestFields& f) {
  COHORT_ASSIGN(id, RunId(f));
  COHORT_ASSIGN(status, f.OptionalString("status"));
  COHORT_ASSIGN(end, f.OptionalInt("end_time"));
  COHORT_ASSIGN(name, f.OptionalString("run_name"));
  COHORT_ASSIGN(info, store.UpdateRun(id, status, end, name));
  return json{{"run_info", RunInfoJson(info)}};
}

Action RunLifecycle(const char* stage) {
  return [stage](TrackingStore& store, const RequestFields& f) -> Result<json> {
    COHORT_ASSIGN(id, RunId(f));
    COHORT_RETURN_IF_ERROR(store.SetRunLifecycle(id, stage));
    return json::object();
  };
}

Result<json> SearchRuns(TrackingStore& store, const RequestFields& f) {
  RunSearch search;
  COHORT_ASSIGN(experiments, f.StringList("experiment_ids"));
  search.experiment_ids = experiments;
  COHORT_RETURN_IF_ERROR(ReadSearchFields(f, "run_view_type", &search));
  COHORT_ASSIGN(page, store.SearchRuns(search));
  json out = json::object();
  if (!page.items.empty()) {
    out["runs"] = json::array();
    for (const Run& r : page.items) out["runs"].push_back(RunJson(r));
  }
  if (!page.next_page_token.empty()) out["next_page_token"] = page.next_page_token;
  return out;
}

Result<json> LogMetric(TrackingStore& store, const RequestFields& f) {
  COHORT_ASSIGN(id, RunId(f));
  COHORT_ASSIGN(metric, ParseMetric(f));
  Batch batch;
  batch.metrics.push_back(metric);
  COHORT_RETURN_IF_ERROR(store.LogBatch(id, batch));
  return json::object();
}

// log-parameter and set-tag: one key and value.
Result<json> LogKeyValue(TrackingStore& store, const RequestFields& f, bool param) {
  COHORT_ASSIGN(id, RunId(f));
  COHORT_ASSIGN(key, f.RequiredString("key"));
  COHORT_ASSIGN(value, f.OptionalString("value"));
  if (!f.Has("value")) return f.RequiredString("value").status();
  Batch batch;
  if (param) {
    batch.params.push_back({key, *value});
  } else {
    batch.tags.push_back({key, *value});
  }
  COHORT_RETURN_IF_ERROR(store.LogBatch(id, batch));
  return json::object();
}

Result<json> DeleteTag(TrackingStore& store, const RequestFields& f) {
  COHORT_ASSIGN(id, RunId(f));
  COHORT_ASSIGN(key, f.RequiredString("key"));
  COHORT_RETURN_IF_ERROR(store.DeleteTag(id, key));
  return json::object();
}

Result<json> LogBatch(TrackingStore& store, const RequestFields& f) {
  COHORT_ASSIGN(id, RunId(f));
  Batch batch;
  COHORT_ASSIGN(metrics, f.ObjectList("metrics"));
  COHORT_ASSIGN(params, f.ObjectList("params"));
  COHORT_ASSIGN(tags, Tags(f, "tags"));
  // Count first: an oversize batch is refused before any of it is parsed.
  COHORT_RETURN_IF_ERROR(ValidateBatchSizes(metrics.size(), params.size(), tags.size()));
  for (const RequestFields& item : metrics) {
    COHORT_ASSIGN(m, ParseMetric(item));
    batch.metrics.push_back(m);
  }
  for (const RequestFields& item : params) {
    COHORT_ASSIGN(key, item.RequiredString("key"));
    COHORT_ASSIGN(value, item.OptionalString("value"));
    batch.params.push_back({key, value.value_or("")});
  }
  batch.tags = tags;
  COHORT_ASSIGN(batch_id, f.OptionalString("cohort_batch_id"));
  batch.batch_id = batch_id.value_or("");
  COHORT_RETURN_IF_ERROR(store.LogBatch(id, batch));
  return json::object();
}

// runs/log-inputs (service.proto LogInputs: run_id, datasets: [DatasetInput
// {tags: [InputTag], dataset: Dataset {name, digest, source_type, source,
// schema, profile}}]).
Result<json> LogInputs(TrackingStore& store, const RequestFields& f) {
  COHORT_ASSIGN(id, RunId(f));
  COHORT_ASSIGN(items, f.ObjectList("datasets"));
  std::vector<DatasetInput> inputs;
  for (const RequestFields& item : items) {
    COHORT_ASSIGN(d, item.RequiredObject("dataset"));
    DatasetInput input;
    COHORT_ASSIGN(name, d.RequiredString("name"));
    COHORT_ASSIGN(digest, d.RequiredString("digest"));
    COHORT_ASSIGN(source_type, d.RequiredString("source_type"));
    COHORT_ASSIGN(source, d.RequiredString("source"));
    COHORT_ASSIGN(schema, d.OptionalString("schema"));
    COHORT_ASSIGN(profile, d.OptionalString("profile"));
    input.dataset = {name, digest, source_type, source, schema.value_or(""), profile.value_or("")};
    COHORT_ASSIGN(tags, Tags(item, "tags"));
    input.tags = tags;
    inputs.push_back(std::move(input));
  }
  COHORT_RETURN_IF_ERROR(store.LogInputs(id, inputs));
  return json::object();
}

Result<json> GetMetricHistory(TrackingStore& store, const RequestFields& f) {
  COHORT_ASSIGN(id, RunId(f));
  COHORT_ASSIGN(key, f.RequiredString("metric_key"));
  COHORT_ASSIGN(history, store.GetMetricHistory(id, key));
  json out = {{"metrics", json::array()}};
  for (const Metric& m : history) out["metrics"].push_back(MetricJson(m));
  return out;
}

Result<json> GetMetricHistoryBulkInterval(TrackingStore& store, const RequestFields& f) {
  COHORT_ASSIGN(run_ids, f.StringList("run_ids"));
  if (run_ids.empty()) return f.RequiredString("run_ids").status();
  if (run_ids.size() > kMaxBulkRuns) {
    return Status::InvalidArgument("GetMetricHistoryBulkInterval request must specify at most " +
                                   std::to_string(kMaxBulkRuns) + " run_ids. Received " +
                                   std::to_string(run_ids.size()) + " run_ids.");
  }
  COHORT_ASSIGN(key, f.RequiredString("metric_key"));
  COHORT_ASSIGN(start, f.OptionalInt("start_step"));
  COHORT_ASSIGN(end, f.OptionalInt("end_step"));
  if (start.has_value() != end.has_value()) {
    return Status::InvalidArgument(
        "If either start step or end step are specified, both must be specified.");
  }
  if (start && *start > *end) {
    return Status::InvalidArgument(
        "end_step must be greater than start_step. Found start_step=" + std::to_string(*start) +
        " and end_step=" + std::to_string(*end) + ".");
  }
  COHORT_ASSIGN(max, ParseMaxResults(f, kDefaultBulkResults, kMaxBulkResults));
  COHORT_ASSIGN(points, store.GetMetricHistoryBulkInterval(run_ids, key, max, start, end));
  json out = {{"metrics", json::array()}};
  for (const HistoryPoint& p : points) {
    json m = MetricJson(p.metric);
    m["run_id"] = p.run_id;
    out["metrics"].push_back(std::move(m));
  }
  return out;
}

// Not MLflow's: the dashboard's projects page (run counts by status, the
// last activity) for up to kMaxActivityExperiments experiments a call.
constexpr size_t kMaxActivityExperiments = 1000;

Result<json> ExperimentActivities(TrackingStore& store, const RequestFields& f) {
  COHORT_ASSIGN(ids, f.StringList("experiment_ids"));
  if (ids.empty()) return f.RequiredString("experiment_ids").status();
  if (ids.size() > kMaxActivityExperiments) {
    return Status::InvalidArgument("experiments/activity takes at most " +
                                   std::to_string(kMaxActivityExperiments) +
                                   " experiment_ids; got " + std::to_string(ids.size()));
  }
  COHORT_ASSIGN(activities, store.ExperimentActivities(ids));
  json out = {{"experiments", json::array()}};
  for (const ExperimentActivity& a : activities) {
    out["experiments"].push_back({{"experiment_id", a.experiment_id},
                                  {"runs", a.runs},
                                  {"running", a.running},
                                  {"finished", a.finished},
                                  {"failed", a.failed},
                                  {"killed", a.killed},
                                  {"last_activity_time", a.last_activity_time}});
  }
  return out;
}

std::vector<MlflowService::Endpoint> AllEndpoints() {
  return {
      {"experiments/create", {"POST"}, CreateExperiment},
      {"experiments/get", {"GET"}, GetExperiment},
      {"experiments/get-by-name", {"GET"}, GetExperimentByName},
      {"experiments/search", {"GET", "POST"}, SearchExperiments},
      {"experiments/update", {"POST"}, UpdateExperiment},
      {"experiments/delete", {"POST"}, ExperimentLifecycle(kDeleted)},
      {"experiments/restore", {"POST"}, ExperimentLifecycle(kActive)},
      {"experiments/set-experiment-tag", {"POST"}, SetExperimentTag},
      {"experiments/activity", {"GET"}, ExperimentActivities},
      {"runs/create", {"POST"}, CreateRun},
      {"runs/get", {"GET"}, GetRun},
      {"runs/update", {"POST"}, UpdateRun},
      {"runs/delete", {"POST"}, RunLifecycle(kDeleted)},
      {"runs/restore", {"POST"}, RunLifecycle(kActive)},
      {"runs/search", {"GET", "POST"}, SearchRuns},
      {"runs/log-metric", {"POST"}, LogMetric},
      {"runs/log-parameter",
       {"POST"},
       [](auto& s, const auto& f) { return LogKeyValue(s, f, true); }},
      {"runs/set-tag", {"POST"}, [](auto& s, const auto& f) { return LogKeyValue(s, f, false); }},
      {"runs/delete-tag", {"POST"}, DeleteTag},
      {"runs/log-batch", {"POST"}, LogBatch},
      {"runs/log-inputs", {"POST"}, LogInputs},
      {"metrics/get-history", {"GET"}, GetMetricHistory},
      {"metrics/get-history-bulk-interval", {"GET"}, GetMetricHistoryBulkInterval},
  };
}

}  // namespace

MlflowService::MlflowService(TrackingStore* store) : store_(store), endpoints_(AllEndpoints()) {}

const MlflowService::Endpoint* MlflowService::Find(const std::string& name) const {
  for (const Endpoint& endpoint : endpoints_) {
    if (endpoint.name == name) return &endpoint;
  }
  return nullptr;
}

Result<json> MlflowService::Call(const Endpoint& endpoint, const RequestFields& fields) const {
  return endpoint.run(*store_, fields);
}

}  // namespace cohort::track
