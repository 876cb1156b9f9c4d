// MlflowApi: MLflow's REST API 2.0 over HTTP, under /api/2.0/mlflow/ and
// /ajax-api/2.0/mlflow/ (the artifact proxy is ArtifactApi's): a route per
// endpoint of track::MlflowService (track/mlflow_service.h: what each one
// does), errors as {"error_code": ..., "message": ...}
// (server/api_response.h). docs/tracking.md lists the supported subset.
#ifndef COHORT_SERVER_MLFLOW_API_H_
#define COHORT_SERVER_MLFLOW_API_H_

#include "server/access_control.h"
#include "server/router.h"
#include "track/mlflow_service.h"
#include "track/store.h"

namespace cohort::server {

class MlflowApi : public Service {
 public:
  // `access` is null without --auth.
  MlflowApi(track::TrackingStore* store, AccessControl* access);
  // The routes Register adds point into service_: no copies.
  MlflowApi(const MlflowApi&) = delete;
  MlflowApi& operator=(const MlflowApi&) = delete;
  void Register(Router& router) override;

 private:
  track::MlflowService service_;
  AccessControl* access_;
};

}  // namespace cohort::server

#endif  // COHORT_SERVER_MLFLOW_API_H_
