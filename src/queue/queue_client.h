// QueueClient: the queue's HTTP endpoints (queue/queue_api.h) as the CLI,
// agents, sweeps and pipelines call them; a layer of queue paths and headers
// over the one client of a cohort server (http/server_client.h). The server
// comes from http::ResolveServerAddress (COHORT_SERVER or its aliases,
// default http://127.0.0.1:5000); a user's token (--auth) from
// COHORT_TRACKING_TOKEN or MLFLOW_TRACKING_TOKEN; the queue's token (without
// --auth) from COHORT_QUEUE_TOKEN or the server's record on this host
// (queue/queue_token.h); the user it claims without --auth from $USER.
#ifndef COHORT_QUEUE_QUEUE_CLIENT_H_
#define COHORT_QUEUE_QUEUE_CLIENT_H_

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cohort/status.h"
#include "http/server_client.h"

namespace cohort::queue {

// What the server answered: its status and body (a 4xx is an answer, not an
// error; only a server that cannot be reached fails the call).
struct QueueAnswer {
  long status = 0;
  std::string body;
  std::string job_state;     // X-Cohort-Job-State, log reads only
  uint64_t next_offset = 0;  // X-Cohort-Log-Offset, log reads only
  // The error's message of a JSON error body, else the body itself.
  std::string ErrorMessage() const;
};

// The answer's JSON when it is a 200, else the failure to report: the
// call's, or the server's error message with the Status code its error_code
// stands for (http/api_error.h: kNotFound, kPermissionDenied, ...).
Result<nlohmann::json> AnswerJson(const Result<QueueAnswer>& answer);

class QueueClient {
 public:
  QueueClient();                             // from the environment
  explicit QueueClient(std::string server);  // `server` instead of COHORT_SERVER
  // `server` as `source` named it (a flag, "--queue"), which errors quote.
  QueueClient(std::string server, std::string source);
  const std::string& server() const { return client_.address(); }
  // Sends `credential` (an agent's) as the bearer instead of a user's token.
  void UseCredential(std::string credential) { client_.SetBearer(std::move(credential)); }

  // `path` is below /api/queue/ ("jobs/3/cancel").
  Result<QueueAnswer> Get(const std::string& path);
  Result<QueueAnswer> Post(const std::string& path, const nlohmann::json& body);
  // POSTs `bytes` as they are (an agent's job log).
  Result<QueueAnswer> PostBytes(const std::string& path, std::string bytes);

 private:
  Result<QueueAnswer> Call(http::HttpRequest request);

  http::ServerClient client_;
};

}  // namespace cohort::queue

#endif  // COHORT_QUEUE_QUEUE_CLIENT_H_
