// Which experiments a request touches, and whether its user may.
#include "server/access_control.h"

#include <set>

#include <nlohmann/json.hpp>

#include "server/api_response.h"
#include "track/request_fields.h"

namespace cohort::server {
namespace {

constexpr const char* kPrefixes[] = {"/api/2.0/mlflow/", "/ajax-api/2.0/mlflow/"};
constexpr const char* kArtifactPrefixes[] = {"/api/2.0/mlflow-artifacts/artifacts",
                                             "/ajax-api/2.0/mlflow-artifacts/artifacts"};

const std::set<std::string> kReadEndpoints = {"experiments/get",
                                              "experiments/activity",
                                              "experiments/get-by-name",
                                              "experiments/search",
                                              "runs/get",
                                              "runs/search",
                                              "metrics/get-history",
                                              "metrics/get-history-bulk-interval"};

std::string Endpoint(const std::string& path) {
  for (const char* p : kPrefixes) {
    if (path.rfind(p, 0) == 0) return path.substr(std::string(p).size());
  }
  return "";
}

// The artifact path's first component ("3/abc/artifacts/x" -> "3"), or
// nullopt when `path` is not an artifact request.
std::optional<std::string> ArtifactExperiment(const http::ServerRequest& request) {
  for (const char* p : kArtifactPrefixes) {
    std::string prefix = p;
    if (request.path != prefix && request.path.rfind(prefix + "/", 0) != 0) continue;
    std::string rest = request.path.substr(std::min(prefix.size() + 1, request.path.size()));
    if (rest.empty()) {  // a listing: ?path=...
      auto query = http::ParseQuery(request.query);
      auto it = query.find("path");
      rest = it == query.end() ? "" : it->second;
    }
    return rest.substr(0, rest.find('/'));
  }
  return std::nullopt;
}

}  // namespace

std::optional<http::ServerResponse> AccessControl::Need(const std::string& experiment_id,
                                                        const std::string& user, bool edit) {
  auto level = store_->Permission(experiment_id, user);
  if (!level.ok()) return ErrorResponse(level.status());
  if (*level == "EDIT" || (!edit && *level == "READ")) return std::nullopt;
  return ErrorResponse(
      "PERMISSION_DENIED",
      "User '" + user + "' may not " + (edit ? "edit" : "read") + " experiment " + experiment_id);
}

std::optional<http::ServerResponse> AccessControl::Check(const http::ServerRequest& request,
                                                         const std::string& user) {
  if (auto experiment = ArtifactExperiment(request)) {
    if (experiment->empty()) {
      return ErrorResponse(
          Status::PermissionDenied("Under --auth an artifact path starts with its "
                                   "experiment id"));
    }
    return Need(*experiment, user, request.method != "GET");
  }
  std::string endpoint = Endpoint(request.path);
  auto fields = track::RequestFields::FromRequest(request);
  // Unparseable requests and the two endpoints without an experiment yet
  // (create; search, which After() filters) go on to the API.
  if (!fields.ok() || endpoint == "experiments/create" || endpoint == "experiments/search") {
    return std::nullopt;
  }
  bool edit = kReadEndpoints.count(endpoint) == 0;
  std::vector<std::string> experiments, runs;
  auto text = [&](const char* name) {
    auto v = fields->OptionalString(name);
    return v.ok() && v->has_value() ? **v : std::string();
  };
  if (!text("experiment_id").empty()) experiments.push_back(text("experiment_id"));
  if (endpoint == "runs/create" && experiments.empty()) experiments.push_back("0");
  if (endpoint == "experiments/get-by-name") {
    auto e = store_->GetExperimentByName(text("experiment_name"));
    if (!e.ok()) return std::nullopt;  // the API answers the 404
    experiments.push_back(e->experiment_id);
  }
  if (endpoint == "runs/search" || endpoint == "experiments/activity") {
    auto ids = fields->StringList("experiment_ids");
    if (!ids.ok()) return std::nullopt;
    if (ids->empty()) {
      return ErrorResponse(
          Status::PermissionDenied("Under --auth " + endpoint + " needs experiment_ids"));
    }
    experiments.insert(experiments.end(), ids->begin(), ids->end());
  }
  std::string run_id = text("run_id").empty() ? text("run_uuid") : text("run_id");
  if (!run_id.empty()) runs.push_back(run_id);
  if (endpoint == "metrics/get-history-bulk-interval") {
    auto ids = fields->StringList("run_ids");
    if (ids.ok()) runs.insert(runs.end(), ids->begin(), ids->end());
  }
  for (const std::string& run : runs) {
    auto e = store_->ExperimentOfRun(run);
    if (!e.ok()) return std::nullopt;  // the API answers the 404
    experiments.push_back(*e);
  }
  if (experiments.empty()) return ErrorResponse(Status::PermissionDenied("No experiment named"));
  for (const std::string& e : experiments) {
    if (auto denied = Need(e, user, edit)) return denied;
  }
  return std::nullopt;
}

void AccessControl::After(const http::ServerRequest& request, const std::string& user,
                          http::ServerResponse* response) {
  if (response->status != 200) return;
  std::string endpoint = Endpoint(request.path);
  if (endpoint == "experiments/create") {
    auto body = nlohmann::json::parse(response->body, nullptr, false);
    if (!body.is_discarded() && body.contains("experiment_id")) {
      Status s = store_->Grant(body["experiment_id"].get<std::string>(), user, "EDIT");
      if (!s.ok()) *response = ErrorResponse(s);
    }
  } else if (endpoint == "experiments/search") {
    auto body = nlohmann::json::parse(response->body, nullptr, false);
    if (body.is_discarded() || !body.contains("experiments")) return;
    nlohmann::json readable = nlohmann::json::array();
    for (const auto& e : body["experiments"]) {
      if (!Need(e["experiment_id"].get<std::string>(), user, false)) readable.push_back(e);
    }
    body["experiments"] = readable;
    response->body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

Handler CheckedBy(AccessControl* access, Handler handler) {
  if (access == nullptr) return handler;
  return [access, handler = std::move(handler)](const Call& call) {
    if (auto denied = access->Check(call.request, call.user)) return *denied;
    http::ServerResponse response = handler(call);
    access->After(call.request, call.user, &response);
    return response;
  };
}

}  // namespace cohort::server
