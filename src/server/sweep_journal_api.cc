// The sweep journal endpoints (sweep_journal_api.h).
#include "server/sweep_journal_api.h"

#include <nlohmann/json.hpp>

#include "server/api_response.h"
#include "track/request_fields.h"

namespace cohort::server {

using nlohmann::json;

void SweepJournalApi::Register(Router& router) {
  Mount mount;
  mount.prefixes = {"/api/cohort/sweeps/journal/"};
  mount.no_route = [](const Call& call) {
    return ErrorResponse("ENDPOINT_NOT_FOUND", "No API endpoint at " + call.request.path);
  };
  mount.wrong_method = [](const Call& call) { return MethodNotAllowed(call.request); };
  router.AddMount(std::move(mount))
      .Add({"POST"}, "append", [this](const Call& call) { return Append(call); })
      .Add({"GET"}, "records", [this](const Call& call) { return Records(call); });
}

// The journal a call names (its fields, experiment and sweep) once the
// caller may read it (or, with `edit`, append to it); else the answer.
std::optional<http::ServerResponse> SweepJournalApi::Open(const Call& call, bool edit,
                                                          JournalCall* out) {
  auto fields = track::RequestFields::FromRequest(call.request);
  if (!fields.ok()) return UnreadableFields(call.request, fields.status());
  auto experiment = fields->RequiredString("experiment_id");
  if (!experiment.ok()) return ErrorResponse(experiment.status());
  auto sweep = fields->RequiredString("sweep");
  if (!sweep.ok()) return ErrorResponse(sweep.status());
  if (access_ != nullptr) {
    if (auto denied = access_->Need(*experiment, call.user, edit)) return *denied;
  }
  out->fields.emplace(std::move(*fields));
  out->experiment = *experiment;
  out->sweep = *sweep;
  return std::nullopt;
}

http::ServerResponse SweepJournalApi::Records(const Call& call) {
  JournalCall journal;
  if (auto answer = Open(call, /*edit=*/false, &journal)) return *answer;
  auto records = store_->SweepJournal(journal.experiment, journal.sweep);
  if (!records.ok()) return ErrorResponse(records.status());
  return JsonResponse(200, {{"records", *records}});
}

http::ServerResponse SweepJournalApi::Append(const Call& call) {
  JournalCall journal;
  if (auto answer = Open(call, /*edit=*/true, &journal)) return *answer;
  auto seq = journal.fields->RequiredInt("seq");
  if (!seq.ok()) return ErrorResponse(seq.status());
  auto record = journal.fields->RequiredString("record");
  if (!record.ok()) return ErrorResponse(record.status());
  Status s = store_->AppendSweepRecord(journal.experiment, journal.sweep, *seq, *record);
  if (!s.ok()) return ErrorResponse(s);
  return JsonResponse(200, json::object());
}

}  // namespace cohort::server
