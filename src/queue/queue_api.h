// QueueApi: the queue's HTTP endpoints, served by `cohort server` under
// /api/queue/ behind the tracking server's authentication.
//
//   POST /api/queue/jobs               submit: {"command": [...], "slots", "pool",
//                                      "priority", "project", "max_time", "cwd", "env"}
//                                      -> {"id": N}
//   GET  /api/queue/jobs               {"jobs": [job, ...]} in queue order: running,
//                                      then waiting by position, then the rest by id
//   GET  /api/queue/jobs/ID            job
//   POST /api/queue/jobs/ID/cancel     {} (only the job's owner)
//   GET  /api/queue/jobs/ID/log?offset=N
//                                      the log's bytes from N (at most 1 MiB); headers
//                                      X-Cohort-Job-State and X-Cohort-Log-Offset (the
//                                      next offset). The state is read before the bytes,
//                                      so a final state means the bytes are complete.
//
//   GET  /api/queue/agents             {"agents": [{"name", "pool", "slots", "last_seen",
//                                      "alive"}]}
// Agents (`cohort agent`) call:
//   POST /api/queue/agents/NAME/heartbeat  {"address", "pool", "slots", "running": [ids],
//                                      "wait_s"} -> {"start": [{"id", "command", "env",
//                                      "cwd", "log_offset", "hosts"}], "signal": [{"id",
//                                      "signal"}], "drop": [ids]}
//   POST /api/queue/agents/NAME/jobs/ID/log?offset=N   the log's bytes from N
//                                      -> {"offset": bytes held}
//   POST /api/queue/agents/NAME/jobs/ID/exit           {"exit_code"} -> {}
//
// Errors are JSON {"error_code", "message"} as the MLflow API answers them.
// Without --auth the user is the X-Cohort-User header ("anonymous" when absent).
#ifndef COHORT_QUEUE_QUEUE_API_H_
#define COHORT_QUEUE_QUEUE_API_H_

#include <string>

#include "queue/queue_service.h"
#include "server/http_server.h"

namespace cohort::queue {

class QueueApi {
 public:
  static constexpr char kPrefix[] = "/api/queue/";

  explicit QueueApi(QueueService* service) : service_(service) {}
  // `user`: the token's user under --auth, else "".
  server::HttpResponse Handle(const server::HttpRequest& request, const std::string& user);

 private:
  server::HttpResponse SubmitJob(const server::HttpRequest& request, const std::string& user);
  server::HttpResponse ListJobs();
  server::HttpResponse ShowJob(const JobRecord& job);
  server::HttpResponse CancelJob(const JobRecord& job, const std::string& user);
  server::HttpResponse ReadLog(const server::HttpRequest& request, const JobRecord& job);
  server::HttpResponse HandleAgent(const server::HttpRequest& request, const std::string& rest);
  nlohmann::json JobJson(const JobRecord& job);

  QueueService* service_;
};

}  // namespace cohort::queue

#endif  // COHORT_QUEUE_QUEUE_API_H_
