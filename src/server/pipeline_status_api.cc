// The pipelines' status endpoints (pipeline_status_api.h).
#include "server/pipeline_status_api.h"

#include <set>
#include <string>
#include <vector>

#include "common/word_list.h"
#include "server/api_response.h"
#include "track/request_fields.h"

namespace cohort::server {

namespace {

using nlohmann::json;

const std::vector<std::string> kPipelineStates = {"waiting", "running", "done",
                                                  "failed",  "broken",  "stopped"};
const std::vector<std::string> kStepStates = {"waiting", "running", "done",
                                              "failed",  "cached",  "broken"};
// The most output commits' records a document carries: what a controller
// sends (pipeline/state.h's kRecentOutputRecords; the server is below the
// pipeline layer, so it cannot include it).
constexpr size_t kMaxCommitRecords = 50;

Status Invalid(const std::string& field, const std::string& problem) {
  return Status::InvalidArgument("Invalid value for parameter '" + field +
                                 "' supplied: " + problem);
}

Status CheckState(const std::string& field, const json& state,
                  const std::vector<std::string>& known) {
  if (!state.is_string()) return Invalid(field, "expected one of " + JoinWithOr(known));
  for (const std::string& k : known)
    if (state == k) return Status::OK();
  return Invalid(field, "'" + state.get<std::string>() + "' is not " + JoinWithOr(known));
}

Status CheckDatums(const std::string& field, const json& datums) {
  if (!datums.is_object()) return Invalid(field, "expected an object {done, total, failed}");
  for (const char* count : {"done", "total", "failed"}) {
    if (!datums.contains(count) || !datums[count].is_number_unsigned())
      return Invalid(field + "." + count, "expected a count (an integer of 0 or more)");
  }
  if (datums["done"].get<uint64_t>() + datums["failed"].get<uint64_t>() >
      datums["total"].get<uint64_t>())
    return Invalid(field, "done + failed is more than total");
  return Status::OK();
}

Status CheckStep(const std::string& field, const json& step, const std::set<std::string>& names) {
  if (!step.is_object()) return Invalid(field, "expected an object");
  if (!step.contains("name") || !step["name"].is_string() || step["name"] == "")
    return Invalid(field + ".name", "expected the step's name");
  COHORT_RETURN_IF_ERROR(CheckState(field + ".state", step.value("state", json()), kStepStates));
  COHORT_RETURN_IF_ERROR(CheckDatums(field + ".datums", step.value("datums", json())));
  const json inputs = step.value("inputs", json());
  if (!inputs.is_array()) return Invalid(field + ".inputs", "expected a list");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string at = field + ".inputs[" + std::to_string(i) + "]";
    const json& in = inputs[i];
    if (!in.is_object()) return Invalid(at, "expected an object");
    if (in.contains("step")) {
      if (!in["step"].is_string() || !names.count(in["step"].get<std::string>()))
        return Invalid(at + ".step", "not a step of this pipeline");
    } else if (!in.contains("dataset") || !in["dataset"].is_string()) {
      return Invalid(at, "expected a step or a dataset");
    }
  }
  const json jobs = step.value("jobs", json::array());
  if (!jobs.is_array()) return Invalid(field + ".jobs", "expected a list of job ids");
  for (const json& job : jobs)
    if (!job.is_number_unsigned()) return Invalid(field + ".jobs", "expected a list of job ids");
  return Status::OK();
}

bool IsNonEmptyString(const json& j) { return j.is_string() && !j.get<std::string>().empty(); }

// One output commit's provenance record (pipeline/provenance.h): what the
// dashboard's commit view shows and links from.
Status CheckCommit(const std::string& field, const json& record,
                   const std::set<std::string>& names) {
  if (!record.is_object()) return Invalid(field, "expected a provenance record (an object)");
  const json step = record.value("step", json());
  if (!step.is_string() || !names.count(step.get<std::string>()))
    return Invalid(field + ".step", "not a step of this pipeline");
  for (const char* key : {"output", "output_commit"})
    if (!IsNonEmptyString(record.value(key, json())))
      return Invalid(field + "." + key, "expected a non-empty string");
  const json inputs = record.value("inputs", json());
  if (!inputs.is_array()) return Invalid(field + ".inputs", "expected a list");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const json& in = inputs[i];
    if (!in.is_object() || !IsNonEmptyString(in.value("location", json())) ||
        !IsNonEmptyString(in.value("commit", json())))
      return Invalid(field + ".inputs[" + std::to_string(i) + "]",
                     "expected an object {location, commit}");
  }
  const json jobs = record.value("jobs", json::array());
  if (!jobs.is_array()) return Invalid(field + ".jobs", "expected a list of job ids");
  for (const json& job : jobs)
    if (!job.is_number_unsigned()) return Invalid(field + ".jobs", "expected a list of job ids");
  for (const char* key : {"code", "params"})
    if (record.contains(key) && !record[key].is_object())
      return Invalid(field + "." + key, "expected an object");
  return Status::OK();
}

// The provenance records of the latest output commits; absent from the
// documents of controllers older than the dashboard's commit view.
Status CheckCommits(const json& status, const std::set<std::string>& names) {
  if (!status.contains("commits")) return Status::OK();
  const json& commits = status["commits"];
  if (!commits.is_array())
    return Invalid("status.commits", "expected a list of provenance records");
  if (commits.size() > kMaxCommitRecords)
    return Invalid("status.commits", "more than " + std::to_string(kMaxCommitRecords) +
                                         " records (a controller sends its latest " +
                                         std::to_string(kMaxCommitRecords) + ")");
  for (size_t i = 0; i < commits.size(); ++i)
    COHORT_RETURN_IF_ERROR(
        CheckCommit("status.commits[" + std::to_string(i) + "]", commits[i], names));
  return Status::OK();
}

// What the list shows of a pipeline: its state and each step's.
json Summary(const track::PipelineStatusRecord& record) {
  json summary = {{"name", record.name},
                  {"owner", record.owner},
                  {"update_time", record.update_time},
                  {"state", ""},
                  {"steps", json::array()}};
  const json status = json::parse(record.status, nullptr, false);
  if (!status.is_object()) return summary;
  summary["state"] = status.value("state", "");
  for (const json& step : status.value("steps", json::array()))
    summary["steps"].push_back(
        {{"name", step.value("name", "")}, {"state", step.value("state", "")}});
  return summary;
}

}  // namespace

Status CheckPipelineStatus(const std::string& name, const json& status) {
  if (!status.is_object()) return Invalid("status", "expected a JSON object");
  if (status.value("pipeline", json()) != name)
    return Invalid("status.pipeline", "expected the pipeline's name, '" + name + "'");
  COHORT_RETURN_IF_ERROR(
      CheckState("status.state", status.value("state", json()), kPipelineStates));
  const json steps = status.value("steps", json());
  if (!steps.is_array()) return Invalid("status.steps", "expected a list of steps");
  std::set<std::string> names;
  for (const json& step : steps) {
    if (step.is_object() && step.contains("name") && step["name"].is_string() &&
        !names.insert(step["name"].get<std::string>()).second)
      return Invalid("status.steps",
                     "a second step named '" + step["name"].get<std::string>() + "'");
  }
  for (size_t i = 0; i < steps.size(); ++i)
    COHORT_RETURN_IF_ERROR(CheckStep("status.steps[" + std::to_string(i) + "]", steps[i], names));
  return CheckCommits(status, names);
}

void PipelineStatusApi::Register(Router& router) {
  Mount mount;
  mount.prefixes = {"/api/cohort/pipelines/"};
  mount.no_route = [](const Call& call) {
    return ErrorResponse("ENDPOINT_NOT_FOUND", "No API endpoint at " + call.request.path);
  };
  mount.wrong_method = [](const Call& call) { return MethodNotAllowed(call.request); };
  router.AddMount(std::move(mount))
      .Add({"POST"}, "status", [this](const Call& call) { return Put(call); })
      .Add({"GET"}, "status", [this](const Call& call) { return Get(call); })
      .Add({"GET"}, "list", [this](const Call& call) { return List(call); });
}

http::ServerResponse PipelineStatusApi::Put(const Call& call) {
  auto fields = track::RequestFields::FromRequest(call.request);
  if (!fields.ok()) return UnreadableFields(call.request, fields.status());
  auto name = fields->RequiredString("name");
  if (!name.ok()) return ErrorResponse(name.status());
  auto object = fields->RequiredObject("status");
  if (!object.ok()) return ErrorResponse(object.status());
  const json& status = object->json();
  Status checked = CheckPipelineStatus(*name, status);
  if (!checked.ok()) return ErrorResponse(checked);
  Status put = store_->PutPipelineStatus(*name, call.user, status.dump());
  if (!put.ok()) return ErrorResponse(put);
  return JsonResponse(200, json::object());
}

http::ServerResponse PipelineStatusApi::Get(const Call& call) {
  auto fields = track::RequestFields::FromRequest(call.request);
  if (!fields.ok()) return UnreadableFields(call.request, fields.status());
  auto name = fields->RequiredString("name");
  if (!name.ok()) return ErrorResponse(name.status());
  auto record = store_->GetPipelineStatus(*name);
  if (!record.ok()) return ErrorResponse(record.status());
  return JsonResponse(200, {{"name", record->name},
                            {"owner", record->owner},
                            {"update_time", record->update_time},
                            {"status", json::parse(record->status, nullptr, false)}});
}

http::ServerResponse PipelineStatusApi::List(const Call&) {
  auto records = store_->PipelineStatuses();
  if (!records.ok()) return ErrorResponse(records.status());
  json pipelines = json::array();
  for (const track::PipelineStatusRecord& record : *records) pipelines.push_back(Summary(record));
  return JsonResponse(200, {{"pipelines", pipelines}});
}

}  // namespace cohort::server
