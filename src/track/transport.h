// Transport: where a TrackingRun's MLflow requests go. Over HTTP to a
// server (one libcurl handle pool, so the connection stays open), or
// in-process to an embedded store through the same track::MlflowService
// the server runs (track/embedded_transport.h), so both paths validate and
// answer alike.
#ifndef COHORT_TRACK_TRANSPORT_H_
#define COHORT_TRACK_TRANSPORT_H_

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cohort/status.h"

namespace cohort::track {

class Transport {
 public:
  virtual ~Transport() = default;
  // Calls an MLflow endpoint ("runs/log-batch"), or a cohort one by its
  // path ("/api/cohort/..."; over HTTP only); GET sends `body`'s fields
  // as the query. The answer's JSON on 200. A server that cannot be reached
  // (connection refused, timeout, 5xx) is kPeerFailure: try again later. A
  // refusal (4xx) has the code its error_code stands for (kNotFound for
  // RESOURCE_DOES_NOT_EXIST, ...; http/api_error.h) and the message
  // "<method> <endpoint>: <error_code>: <server's message>".
  virtual Result<nlohmann::json> Call(const std::string& method, const std::string& endpoint,
                                      const nlohmann::json& body) = 0;
  // Uploads to the artifact proxy at `path` ("<experiment>/<run>/artifacts/x").
  virtual Status PutArtifact(const std::string& path, const std::string& bytes) = 0;
  virtual bool remote() const = 0;
};

// The path of `endpoint` as Call takes it: an MLflow endpoint's
// ("runs/get" -> "/api/2.0/mlflow/runs/get"), or `endpoint` itself when it is
// a path ("/api/cohort/...").
std::string ApiPath(const std::string& endpoint);

// "http(s)://..." or "sqlite:PATH" (artifacts then go beside PATH, in
// PATH's directory under artifacts/).
Result<std::unique_ptr<Transport>> OpenTransport(const std::string& uri);

// The string at JSON pointer `pointer` ("/run/info/run_id") in a server's
// answer; kPeerFailure naming the pointer when it is missing or not a string.
Result<std::string> StringIn(const nlohmann::json& answer, const std::string& pointer);

// The id of the experiment named `name`, created when there is none (another
// client creating it at the same moment is fine). An answer without the id is
// kPeerFailure.
Result<std::string> ExperimentIdByName(Transport& transport, const std::string& name);

}  // namespace cohort::track

#endif  // COHORT_TRACK_TRANSPORT_H_
