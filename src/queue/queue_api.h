// QueueApi: the service of the queue's HTTP endpoints, mounted by
// `cohort server` under /api/queue/; it authenticates its callers itself.
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
// Errors are JSON {"error_code", "message"} (server/api_response.h).
// Every request needs a secret (queue/queue_access.h says whose, and what it
// allows): a caller sees only the jobs it may read (403 on another's), and
// only the agent a job runs on may report its log and exit (403).
// Without --auth the user is the X-Cohort-User header ("anonymous" when absent).
#ifndef COHORT_QUEUE_QUEUE_API_H_
#define COHORT_QUEUE_QUEUE_API_H_

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "queue/queue_access.h"
#include "queue/queue_service.h"
#include "server/router.h"

namespace cohort::queue {

class QueueApi : public server::Service {
 public:
  static constexpr char kPrefix[] = "/api/queue/";

  // `on`: the server runs a job queue; without one every call answers
  // ENDPOINT_NOT_FOUND saying how to start one.
  explicit QueueApi(bool on) : on_(on) {}
  // The queue has started: calls are answered from now on (503 before).
  // Called once; both outlive the server.
  void Attach(QueueService* service, const QueueAccess* access);
  void Register(server::Router& router) override;

 private:
  using QueueHandler = std::function<http::ServerResponse(const server::Call&, const QueueCaller&)>;
  using JobHandler = std::function<http::ServerResponse(const server::Call&, const QueueCaller&,
                                                        const JobRecord&)>;
  struct Backend {
    QueueService* service = nullptr;
    const QueueAccess* access = nullptr;
  };

  // `handler` once the queue runs and the caller is identified (and, off
  // the agents' own endpoints, is a user).
  server::Handler Checked(QueueHandler handler);
  // Checked, and the job "{id}" names is one the caller may read.
  server::Handler OnJob(JobHandler handler);

  http::ServerResponse SubmitJob(const server::Call& call, const QueueCaller& caller);
  http::ServerResponse ListJobs(const server::Call& call, const QueueCaller& caller);
  http::ServerResponse CancelJob(const JobRecord& job, const std::string& user);
  http::ServerResponse ReadLog(const http::ServerRequest& request, const JobRecord& job);
  http::ServerResponse Heartbeat(const server::Call& call, const QueueCaller& caller);
  http::ServerResponse AppendLog(const server::Call& call, const QueueCaller& caller);
  http::ServerResponse ReportExit(const server::Call& call, const QueueCaller& caller);
  std::optional<http::ServerResponse> AsAgent(const server::Call& call,
                                              const QueueCaller& caller) const;
  std::optional<http::ServerResponse> AgentsJob(const server::Call& call, const QueueCaller& caller,
                                                uint64_t* id) const;
  std::optional<http::ServerResponse> RunsOn(const std::string& agent, uint64_t id) const;
  std::optional<http::ServerResponse> ReadableJob(const server::Call& call,
                                                  const QueueCaller& caller, JobRecord* job) const;
  nlohmann::json JobJson(const JobRecord& job) const;

  const bool on_;
  Backend backend_;  // written once by Attach, before attached_
  std::atomic<bool> attached_{false};
};

// Letters, digits, '.', '_', '-'; at most 64; not "local" (this host).
bool ValidAgentName(const std::string& name);

}  // namespace cohort::queue

#endif  // COHORT_QUEUE_QUEUE_API_H_
