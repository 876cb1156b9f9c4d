// QueueService: the queue inside `cohort server`. Keeps the jobs in a
// QueueStore, runs the scheduling loop (each pass calls sched::Schedule, the
// policy the simulator runs) and is the executor for this host: it starts
// jobs detached (queue/job_process.h), follows them to their exit status,
// enforces --max-time, and stops cancelled and preempted jobs with SIGTERM,
// then SIGKILL after the grace period. A restarted service finds its running
// jobs in the store and follows them again.
//
// Agents (`cohort agent`, queue/queue_agent.h) are the other hosts of their
// pool: each heartbeat says which jobs the agent runs and answers which to
// start and which to signal; an agent silent for longer than the agent
// timeout has its jobs requeued.
#ifndef COHORT_QUEUE_QUEUE_SERVICE_H_
#define COHORT_QUEUE_QUEUE_SERVICE_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cohort/status.h"
#include "queue/job_record.h"
#include "queue/queue_store.h"
#include "queue/slurm_pool.h"
#include "sched/policy.h"

namespace cohort::queue {

struct QueueOptions {
  std::string db_path;  // SQLite file holding the queue_* tables
  std::string log_dir;  // <id>.log and <id>.exit of every job
  int local_slots = 0;  // slots of this host (pool "default"); 0: it runs no jobs
  double grace_s = 60;  // SIGTERM to SIGKILL
  sched::PolicyKind policy = sched::PolicyKind::kCohort;  // cohort server --policy
  double pass_interval_s = 0.5;
  double usage_half_life_s = 6 * 3600;
  double agent_timeout_s = 10;  // an agent silent this long is lost
  // A pool of this name runs its jobs through SLURM (queue/slurm_pool.h);
  // empty: none.
  std::string slurm_pool;
  std::string slurm_partition;  // "" = SLURM's default partition
  // Guaranteed slots per project (sched::QueueState::quota); empty: none.
  std::map<std::string, int> quota;
};

// A job for an agent to start, with everything the agent needs.
struct AgentStart {
  uint64_t id = 0;
  std::vector<std::string> command;
  std::vector<std::string> env;  // complete: the queue's variables included
  std::string cwd;
  // The server's log already holds this many bytes (earlier runs): the
  // agent's log offsets for this run start here.
  uint64_t log_offset = 0;
  // A gang over several agents: `cohort run -H` hosts ("ADDRESS:SLOTS,...").
  std::string hosts;
};

// The answer to an agent's heartbeat.
struct AgentWork {
  std::vector<AgentStart> start;
  std::vector<std::pair<uint64_t, int>> signal;  // job, signal number
  std::vector<uint64_t> drop;  // jobs it runs that are no longer its own: kill them
};

// The pool every job goes to unless --pool names another, and the name of
// the server's own host in it.
inline constexpr char kDefaultPool[] = "default";
inline constexpr char kLocalHost[] = "local";
// The one host of a SLURM pool, which stands for the whole partition.
inline constexpr char kSlurmHost[] = "slurm";

class QueueService {
 public:
  // Opens the store, follows the running jobs it lists again, and starts the
  // scheduling loop.
  static Result<std::unique_ptr<QueueService>> Start(const QueueOptions& options);
  ~QueueService();  // Stop(); running jobs keep running
  QueueService(const QueueService&) = delete;
  QueueService& operator=(const QueueService&) = delete;
  void Stop();

  // Records `job` (id, state and times are set here). A gang larger than its
  // pool is refused with the pool's size in the message.
  Result<uint64_t> Submit(JobRecord job);
  Result<std::optional<JobRecord>> Get(uint64_t id);
  Result<std::vector<JobRecord>> List();
  // The policy's position, reason and estimate for a waiting job, when the
  // last pass saw it.
  std::optional<sched::PendingStatus> PendingStatusOf(uint64_t id);
  // Cancels a waiting job at once, or stops a running one (SIGTERM, then
  // SIGKILL after the grace period; it ends as cancelled). Ownership is the
  // caller's to check.
  Status Cancel(uint64_t id, const std::string& by);

  // An agent's heartbeat: registers it (or updates its pool and slots) and
  // answers its work, waiting up to `wait_s` for some when there is none.
  Result<AgentWork> Heartbeat(const std::string& agent, const std::string& address,
                              const std::string& pool, int slots,
                              const std::vector<uint64_t>& running, double wait_s);
  // Every agent heard of since this server started: name, pool, slots,
  // last_seen (seconds since the epoch), alive.
  nlohmann::json AgentsJson();
  // The agent's job `id` ended with `exit_code`. A job that is no longer
  // the agent's (requeued meanwhile) is left alone.
  Status ReportExit(const std::string& agent, uint64_t id, int exit_code);
  // Appends the agent's job log bytes that start at `offset`; bytes already
  // held are skipped. Returns the log's size.
  Result<uint64_t> AppendLog(const std::string& agent, uint64_t id, uint64_t offset,
                             const std::string& bytes);

  std::string LogPath(uint64_t id) const;
  int local_slots() const { return options_.local_slots; }
  const QueueOptions& options() const { return options_; }

 private:
  QueueService(QueueOptions options, std::unique_ptr<QueueStore> store)
      : options_(std::move(options)), store_(std::move(store)) {}
  std::string ExitPath(uint64_t id) const;
  std::string RunPath(uint64_t id) const;  // the run file of a job of this host
  struct Agent {
    std::string address;  // how `cohort run -H` reaches it
    std::string pool;
    int slots = 0;
    double last_seen = 0;
  };
  // The hosts of a running job: its placement, else its one host.
  std::vector<std::pair<std::string, int>> HostsOf(const JobRecord& job) const;
  // The pool's hosts: this one (pool "default") and its live agents.
  std::vector<sched::Host> PoolHosts(const std::string& pool, double now) const;
  bool AgentAlive(const std::string& name, double now) const;
  Result<AgentWork> AgentWorkFor(const std::string& agent, const std::vector<uint64_t>& running,
                                 double now);
  void Loop();
  Status Pass(double now);
  Status Follow(JobRecord* job, double now);
  // A `starting` job after a restart: adopted when its wrapper runs (or
  // SLURM has it), failed (its leftovers killed) when it ran and the wrapper
  // is gone, back in the queue when it never ran.
  Status FollowStarting(JobRecord* job, double now);
  // A `starting` job that never started waits in the queue again.
  Status Requeue(JobRecord* job, double now);
  Status FollowLocal(JobRecord* job, double now);
  Status FollowSlurm(JobRecord* job, double now);
  Status Finish(JobRecord* job, int exit_code, double now);
  Status StopJob(JobRecord* job, StopReason reason, const std::string& why, double now);
  Status Launch(JobRecord* job, double now);
  uint64_t LogSize(uint64_t id) const;
  Status SchedulePool(const std::string& pool, const std::vector<JobRecord>& jobs, double now);

  const QueueOptions options_;
  std::unique_ptr<QueueStore> store_;
  std::unique_ptr<SlurmPool> slurm_;  // null without --slurm-pool

  std::mutex mu_;  // the store, the statuses and the usage
  std::condition_variable wake_;
  std::condition_variable assigned_;  // a pass gave work to an agent
  bool stopping_ = false;
  bool wake_requested_ = false;
  std::map<uint64_t, sched::PendingStatus> pending_status_;
  sched::Usage usage_;
  double last_pass_ = 0;
  double started_ = 0;
  std::map<std::string, Agent> agents_;
  std::thread loop_;
};

// Seconds since the epoch.
double WallClock();

}  // namespace cohort::queue

#endif  // COHORT_QUEUE_QUEUE_SERVICE_H_
