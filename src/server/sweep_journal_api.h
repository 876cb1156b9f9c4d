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

#include <optional>
#include <string>
#include "server/access_control.h"

#include "server/router.h"
#include "track/request_fields.h"
#include "track/store.h"

namespace cohort::server {

class SweepJournalApi : public Service {
 public:
  // `access` is null without --auth.
  SweepJournalApi(track::TrackingStore* store, AccessControl* access)
      : store_(store), access_(access) {}
  void Register(Router& router) override;

 private:
  struct JournalCall {
    std::optional<track::RequestFields> fields;
    std::string experiment;
    std::string sweep;
  };
  std::optional<http::ServerResponse> Open(const Call& call, bool edit, JournalCall* out);
  http::ServerResponse Append(const Call& call);
  http::ServerResponse Records(const Call& call);

  track::TrackingStore* store_;
  AccessControl* access_;
};

}  // namespace cohort::server

#endif  // COHORT_SERVER_SWEEP_JOURNAL_API_H_
