// QueueAgent: `cohort agent`, one host of a pool. Each heartbeat tells the
// server which jobs it runs and collects what to start, signal or drop; it
// runs each job as the server does (queue/job_process.h), but tied to
// itself: when the agent dies its jobs die too, since the server requeues
// them elsewhere after the agent timeout. Job logs are streamed to the
// server and exit statuses reported. A gang placed over several agents is
// started by the first with `cohort run -np N -H ADDR:SLOTS,...` (ssh to the
// others, as `cohort run` always does; COHORT_SSH_COMMAND in the submitter's
// environment configures it); the others only lend their slots.
#ifndef COHORT_QUEUE_QUEUE_AGENT_H_
#define COHORT_QUEUE_QUEUE_AGENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "cohort/status.h"
#include "queue/queue_client.h"

namespace cohort::queue {

struct AgentOptions {
  std::string name;     // unique among the server's agents
  std::string address;  // how other hosts reach this one (`cohort run -H`); "" = name
  std::string pool = "default";
  int slots = 1;
  std::string work_dir;    // the jobs' local logs and exit files
  double heartbeat_s = 1;  // at most this long between heartbeats
};

class QueueAgent {
 public:
  QueueAgent(AgentOptions options, QueueClient* client)
      : options_(std::move(options)), client_(client) {}
  // Heartbeats until `stop` returns true (asked between heartbeats).
  Status Run(const std::function<bool()>& stop);

 private:
  struct Held {
    int wrapper_pid = 0;
    std::string wrapper_start;
    int pgid = 0;
    uint64_t log_base = 0;  // the server's log offset where this run begins
    uint64_t sent = 0;      // bytes of the local log the server holds
    // The last stop signal sent: the server repeats SIGTERM every heartbeat
    // of the grace, and a second SIGTERM would make a `cohort run` job kill
    // its workers at once (a second Ctrl-C), cutting the grace short.
    int signalled = 0;
  };
  Status Beat();
  Status Start(const nlohmann::json& job);
  // Ships new log bytes; true when the job ended and its end was reported.
  bool Follow(uint64_t id, Held* held);
  void ShipLog(uint64_t id, Held* held);
  std::string LocalPath(uint64_t id, const char* suffix) const;

  AgentOptions options_;
  QueueClient* client_;
  std::map<uint64_t, Held> held_;
  bool reported_failure_ = false;
};

}  // namespace cohort::queue

#endif  // COHORT_QUEUE_QUEUE_AGENT_H_
