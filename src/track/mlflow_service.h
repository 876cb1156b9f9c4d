// MlflowService: what each endpoint of MLflow's REST API 2.0 does with a
// TrackingStore (request fields checked, store calls, MLflow's JSON
// answer), without HTTP. `cohort server` serves it over HTTP
// (server/mlflow_api.cc: routes, bodies, error answers) and an embedded
// (`sqlite:`) tracking URI calls it directly (track/embedded_transport.cc),
// so both validate and answer alike. Requests and answers use MLflow's field
// names; docs/tracking.md lists the supported subset.
#ifndef COHORT_TRACK_MLFLOW_SERVICE_H_
#define COHORT_TRACK_MLFLOW_SERVICE_H_

#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cohort/status.h"
#include "track/request_fields.h"
#include "track/store.h"

namespace cohort::track {

class MlflowService {
 public:
  // One endpoint: its name under the API's prefix ("runs/log-batch"), the
  // HTTP methods that reach it, and what it does. An error is a Status
  // whose code http/api_error.h maps to MLflow's error_code.
  struct Endpoint {
    std::string name;
    std::set<std::string> methods;
    std::function<Result<nlohmann::json>(TrackingStore&, const RequestFields&)> run;
  };

  explicit MlflowService(TrackingStore* store);

  // Every endpoint, in a fixed order.
  const std::vector<Endpoint>& endpoints() const { return endpoints_; }
  // The endpoint named `name`, or null.
  const Endpoint* Find(const std::string& name) const;
  // `endpoint`'s answer to `fields`.
  Result<nlohmann::json> Call(const Endpoint& endpoint, const RequestFields& fields) const;

 private:
  TrackingStore* store_;
  std::vector<Endpoint> endpoints_;
};

}  // namespace cohort::track

#endif  // COHORT_TRACK_MLFLOW_SERVICE_H_
