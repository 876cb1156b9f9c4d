// The tracking URI from the environment.
#include "track/tracking_uri.h"

#include "http/url.h"
#include "track/store.h"

namespace cohort::track {
namespace {

// MLFLOW_TRACKING_URI as cohort's client takes it: a server's URL as it is;
// MLflow's SQLite store (SQLAlchemy's sqlite:///relative.db or
// sqlite:////absolute.db) as sqlite:PATH; any other store MLflow's client
// opens itself is refused.
Result<std::string> FromMlflowUri(const std::string& uri) {
  if (http::IsHttpUrl(uri)) return uri;
  const std::string sqlalchemy = "sqlite:///";
  if (uri.rfind(sqlalchemy, 0) == 0 && uri.size() > sqlalchemy.size()) {
    return "sqlite:" + uri.substr(sqlalchemy.size());
  }
  return Status::InvalidArgument(
      "MLFLOW_TRACKING_URI='" + RedactStoreUri(uri) +
      "': cohort's client records to a tracking server (http://HOST:PORT: `cohort server` or "
      "`mlflow server`) or a SQLite file (sqlite:///FILE.db); serve this store with a server and "
      "give its URL");
}

}  // namespace

Result<http::AddressChoice> TrackingUriFromEnv(const EnvLookup& env) {
  http::AddressChoice chosen = http::ResolveTrackingUri(env);
  if (chosen.variable == "MLFLOW_TRACKING_URI") {
    Result<std::string> converted = FromMlflowUri(chosen.value);
    if (!converted.ok()) return converted.status();
    chosen.value = *converted;
  } else if (chosen.variable == "COHORT_SERVER" && !http::IsHttpUrl(chosen.value)) {
    return Status::InvalidArgument("COHORT_SERVER='" + RedactStoreUri(chosen.value) +
                                   "' is not a server's address (http(s)://HOST:PORT); a "
                                   "tracking store of its own is COHORT_TRACKING_URI=sqlite:PATH");
  }
  return chosen;
}

}  // namespace cohort::track
