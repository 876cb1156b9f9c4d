// Where runs are tracked when the caller names no URI, in the form
// OpenTransport takes: the variable http/server_address.h chooses
// (COHORT_TRACKING_URI, MLFLOW_TRACKING_URI, then COHORT_SERVER), with
// MLflow's forms read as cohort's. TrackingRun, `cohort rerun` and `cohort
// sweep` use it, so each reads the environment alike.
#ifndef COHORT_TRACK_TRACKING_URI_H_
#define COHORT_TRACK_TRACKING_URI_H_

#include "cohort/status.h"
#include "common/env_config.h"
#include "http/server_address.h"

namespace cohort::track {

// {"", ""} when no variable is set (the caller's default: DefaultStoreUri(),
// or not recording). MLFLOW_TRACKING_URI's SQLAlchemy SQLite URI
// (sqlite:///relative.db, sqlite:////absolute.db) becomes sqlite:PATH; its
// other stores, and a COHORT_SERVER that is not http(s), are refused naming
// the variable.
Result<http::AddressChoice> TrackingUriFromEnv(const EnvLookup& env);

}  // namespace cohort::track

#endif  // COHORT_TRACK_TRACKING_URI_H_
