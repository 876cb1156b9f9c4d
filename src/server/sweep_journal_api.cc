// The sweep journal endpoints (sweep_journal_api.h).
#include "server/sweep_journal_api.h"

#include <nlohmann/json.hpp>

#include "server/mlflow_api.h"
#include "server/request_fields.h"

namespace cohort::server {
namespace {

using nlohmann::json;

HttpResponse Ok(const json& body) {
  HttpResponse r;
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

HttpResponse MethodNotAllowed(const HttpRequest& request) {
  HttpResponse r = MlflowError("BAD_REQUEST",
                               "Method " + request.method + " is not allowed for " + request.path);
  r.status = 405;
  return r;
}

}  // namespace

HttpResponse HandleSweepJournal(track::TrackingStore& store, AccessControl* access,
                                const HttpRequest& request, const std::string& user) {
  const std::string name = request.path.substr(std::string(kSweepJournalPrefix).size());
  const bool append = name == "append";
  if (!append && name != "records") {
    return MlflowError("ENDPOINT_NOT_FOUND", "No API endpoint at " + request.path);
  }
  if (request.method != (append ? "POST" : "GET")) return MethodNotAllowed(request);
  auto fields = RequestFields::FromRequest(request);
  if (!fields.ok()) return MlflowError(fields.status());
  auto experiment = fields->RequiredString("experiment_id");
  if (!experiment.ok()) return MlflowError(experiment.status());
  auto sweep = fields->RequiredString("sweep");
  if (!sweep.ok()) return MlflowError(sweep.status());
  if (access != nullptr) {
    if (auto denied = access->Need(*experiment, user, /*edit=*/append)) return *denied;
  }
  if (!append) {
    auto records = store.SweepJournal(*experiment, *sweep);
    if (!records.ok()) return MlflowError(records.status());
    return Ok({{"records", *records}});
  }
  auto seq = fields->RequiredInt("seq");
  if (!seq.ok()) return MlflowError(seq.status());
  auto record = fields->RequiredString("record");
  if (!record.ok()) return MlflowError(record.status());
  Status s = store.AppendSweepRecord(*experiment, *sweep, *seq, *record);
  if (!s.ok()) return MlflowError(s);
  return Ok(json::object());
}

}  // namespace cohort::server
