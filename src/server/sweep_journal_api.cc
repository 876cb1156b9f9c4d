// The sweep journal endpoints (sweep_journal_api.h).
#include "server/sweep_journal_api.h"

#include <nlohmann/json.hpp>

#include "server/mlflow_api.h"
#include "server/request_fields.h"

namespace cohort::server {

using nlohmann::json;

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
    return JsonResponse(200, {{"records", *records}});
  }
  auto seq = fields->RequiredInt("seq");
  if (!seq.ok()) return MlflowError(seq.status());
  auto record = fields->RequiredString("record");
  if (!record.ok()) return MlflowError(record.status());
  Status s = store.AppendSweepRecord(*experiment, *sweep, *seq, *record);
  if (!s.ok()) return MlflowError(s);
  return JsonResponse(200, json::object());
}

}  // namespace cohort::server
