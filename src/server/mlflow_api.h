// MlflowApi: MLflow's REST API 2.0 over a TrackingStore, served under
// /api/2.0/mlflow/ and /ajax-api/2.0/mlflow/, plus the artifact proxy
// (/api/2.0/mlflow-artifacts/artifacts) over an ArtifactStore. Requests and
// answers use MLflow's field names; errors are MLflow's
// {"error_code": ..., "message": ...} with MLflow's HTTP statuses.
// docs/tracking.md lists the supported subset.
#ifndef COHORT_SERVER_MLFLOW_API_H_
#define COHORT_SERVER_MLFLOW_API_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "server/artifact_store.h"
#include "server/http_message.h"
#include "track/store.h"

namespace cohort::server {

class MlflowApi {
 public:
  // `artifacts` may be null: the artifact endpoints then answer
  // NOT_IMPLEMENTED (the server was started without --artifacts).
  MlflowApi(track::TrackingStore* store, ArtifactStore* artifacts)
      : store_(store), artifacts_(artifacts) {}

  // True when `path` is one of this API's (the server sends others elsewhere).
  static bool Serves(const std::string& path);
  // True when `path` is the artifact proxy's (uploads: bytes, streamed to disk).
  static bool ServesArtifacts(const std::string& path);
  HttpResponse Handle(const HttpRequest& request);

 private:
  HttpResponse HandleArtifacts(const HttpRequest& request, const std::string& rest);
  HttpResponse ListArtifacts(const HttpRequest& request);

  track::TrackingStore* store_;
  ArtifactStore* artifacts_;
};

// {"error_code": code, "message": message} with MLflow's status for `code`.
HttpResponse MlflowError(const std::string& error_code, const std::string& message);
// A Status from the store or a request as MLflow's error.
HttpResponse MlflowError(const Status& status);
// 405 in MLflow's error format: `request`'s path does not take its method.
HttpResponse MethodNotAllowed(const HttpRequest& request);
// `body` as the answer, with `status` (invalid UTF-8 in strings replaced).
HttpResponse JsonResponse(int status, const nlohmann::json& body);

}  // namespace cohort::server

#endif  // COHORT_SERVER_MLFLOW_API_H_
