// MlflowApi: the service of MLflow's REST API 2.0 over a TrackingStore,
// served under /api/2.0/mlflow/ and /ajax-api/2.0/mlflow/ (the artifact
// proxy is ArtifactApi's). Requests and answers use MLflow's field names;
// errors are {"error_code": ..., "message": ...} (server/api_response.h).
// docs/tracking.md lists the supported subset.
#ifndef COHORT_SERVER_MLFLOW_API_H_
#define COHORT_SERVER_MLFLOW_API_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "server/access_control.h"
#include "server/api_response.h"
#include "server/router.h"
#include "track/store.h"

namespace cohort::server {

class MlflowApi : public Service {
 public:
  // `access` is null without --auth.
  MlflowApi(track::TrackingStore* store, AccessControl* access);
  void Register(Router& router) override;

 private:
  track::TrackingStore* store_;
  AccessControl* access_;
};

}  // namespace cohort::server

#endif  // COHORT_SERVER_MLFLOW_API_H_
