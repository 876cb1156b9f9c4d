// QueueService: the queue inside `cohort server`. Keeps the jobs in a
// QueueStore, runs the scheduling loop (each pass calls sched::Schedule, the
// policy the simulator runs) and is the executor for this host's pool: it
// starts jobs detached (queue/job_process.h), follows them to their exit
// status, enforces --max-time, and stops cancelled and preempted jobs with
// SIGTERM, then SIGKILL after the grace period. A restarted service finds
// its running jobs in the store and follows them again.
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
#include "sched/policy.h"

namespace cohort::queue {

struct QueueOptions {
  std::string db_path;  // SQLite file holding the queue_* tables
  std::string log_dir;  // <id>.log and <id>.exit of every job
  int local_slots = 0;  // slots of this host (pool "default"); 0: it runs no jobs
  double grace_s = 60;  // SIGTERM to SIGKILL
  double pass_interval_s = 0.5;
  double usage_half_life_s = 6 * 3600;
};

// The pool every job goes to unless --pool names another, and the name of
// the server's own host in it.
inline constexpr char kDefaultPool[] = "default";
inline constexpr char kLocalHost[] = "local";

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

  std::string LogPath(uint64_t id) const;
  int local_slots() const { return options_.local_slots; }
  const QueueOptions& options() const { return options_; }

 private:
  QueueService(QueueOptions options, std::unique_ptr<QueueStore> store)
      : options_(std::move(options)), store_(std::move(store)) {}
  std::string ExitPath(uint64_t id) const;
  int PoolSlots(const std::string& pool) const;
  void Loop();
  Status Pass(double now);
  Status Follow(JobRecord* job, double now);
  Status Finish(JobRecord* job, int exit_code, double now);
  Status StopJob(JobRecord* job, StopReason reason, const std::string& why, double now);
  Status Launch(JobRecord* job, const std::vector<sched::Placement>& placement, double now);
  Status SchedulePool(const std::string& pool, const std::vector<JobRecord>& jobs, double now);

  const QueueOptions options_;
  std::unique_ptr<QueueStore> store_;

  std::mutex mu_;  // the store, the statuses and the usage
  std::condition_variable wake_;
  bool stopping_ = false;
  bool wake_requested_ = false;
  std::map<uint64_t, sched::PendingStatus> pending_status_;
  sched::Usage usage_;
  double last_pass_ = 0;
  std::thread loop_;
};

// Seconds since the epoch.
double WallClock();

}  // namespace cohort::queue

#endif  // COHORT_QUEUE_QUEUE_SERVICE_H_
