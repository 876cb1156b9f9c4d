// The sweep journal endpoints, cohort's own (not MLflow's), over the
// tracking store's sweep_journal table (TrackingStore::AppendSweepRecord):
//   POST /api/cohort/sweeps/journal/append   {"experiment_id", "sweep", "seq",
//                                             "record"} -> {}
//   GET  /api/cohort/sweeps/journal/records  ?experiment_id=&sweep=
//                                             -> {"records": [...]}
// Errors are MLflow's JSON ({"error_code", "message"}): a taken seq is
// RESOURCE_ALREADY_EXISTS (400), an unknown experiment 404. Under --auth
// appending needs EDIT on the experiment and reading READ.
#ifndef COHORT_SERVER_SWEEP_JOURNAL_API_H_
#define COHORT_SERVER_SWEEP_JOURNAL_API_H_

#include "server/access_control.h"
#include "server/http_server.h"
#include "track/store.h"

namespace cohort::server {

inline constexpr char kSweepJournalPrefix[] = "/api/cohort/sweeps/journal/";

// `access` is null without --auth; else `user` is the token's user.
HttpResponse HandleSweepJournal(track::TrackingStore& store, AccessControl* access,
                                const HttpRequest& request, const std::string& user);

}  // namespace cohort::server

#endif  // COHORT_SERVER_SWEEP_JOURNAL_API_H_
