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
// Every request needs a secret (queue/queue_access.h says whose, and what it
// allows): a caller sees only the jobs it may read (403 on another's), and
// only the agent a job runs on may report its log and exit (403).
// Without --auth the user is the X-Cohort-User header ("anonymous" when absent).
#ifndef COHORT_QUEUE_QUEUE_API_H_
#define COHORT_QUEUE_QUEUE_API_H_

#include <string>

#include "queue/queue_access.h"
#include "queue/queue_service.h"
#include "server/http_server.h"

namespace cohort::queue {

class QueueApi {
 public:
  static constexpr char kPrefix[] = "/api/queue/";

  QueueApi(QueueService* service, const QueueAccess* access) : service_(service), access_(access) {}
  server::HttpResponse Handle(const server::HttpRequest& request);

 private:
  server::HttpResponse SubmitJob(const server::HttpRequest& request, const QueueCaller& caller);
  server::HttpResponse ListJobs(const QueueCaller& caller);
  server::HttpResponse ShowJob(const JobRecord& job);
  server::HttpResponse CancelJob(const JobRecord& job, const std::string& user);
  server::HttpResponse ReadLog(const server::HttpRequest& request, const JobRecord& job);
  server::HttpResponse HandleAgent(const server::HttpRequest& request, const std::string& rest,
                                   const QueueCaller& caller);
  nlohmann::json JobJson(const JobRecord& job);

  QueueService* service_;
  const QueueAccess* access_;
};

// Letters, digits, '.', '_', '-'; at most 64; not "local" (this host).
bool ValidAgentName(const std::string& name);

}  // namespace cohort::queue

#endif  // COHORT_QUEUE_QUEUE_API_H_
