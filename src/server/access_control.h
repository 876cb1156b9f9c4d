// AccessControl: per-experiment permissions for `cohort server --auth`.
// Each API request is mapped to the experiments it touches (named directly,
// through its runs, or as an artifact path's first component) and needs READ
// (get, search, histories, downloads) or EDIT (everything else) on each; a
// new experiment belongs to its creator (EDIT), and experiment searches
// return only what the user may read.
#ifndef COHORT_SERVER_ACCESS_CONTROL_H_
#define COHORT_SERVER_ACCESS_CONTROL_H_

#include <optional>
#include <string>

#include "http/server/http_server.h"
#include "server/router.h"
#include "track/store.h"

namespace cohort::server {

class AccessControl {
 public:
  explicit AccessControl(track::TrackingStore* store) : store_(store) {}

  // nullopt when `user` may make `request`; else the 403 to answer.
  std::optional<http::ServerResponse> Check(const http::ServerRequest& request,
                                            const std::string& user);
  // Grants the creator of a new experiment EDIT; drops unreadable
  // experiments from a search answer.
  void After(const http::ServerRequest& request, const std::string& user,
             http::ServerResponse* response);
  // nullopt when `user` may read (or, with `edit`, edit) the experiment;
  // else the 403 to answer. For endpoints outside MLflow's (sweep journals).
  std::optional<http::ServerResponse> Need(const std::string& experiment_id,
                                           const std::string& user, bool edit);

 private:
  track::TrackingStore* store_;
};

// `handler` behind `access`: Check before it, After on its answer. A null
// `access` (no --auth) leaves it as it is.
Handler CheckedBy(AccessControl* access, Handler handler);

}  // namespace cohort::server

#endif  // COHORT_SERVER_ACCESS_CONTROL_H_
