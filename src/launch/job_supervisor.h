// A supervisor changes the set of workers while a `cohort run` job runs:
// the elastic driver (elastic_driver.h) starts workers on new hosts, keeps
// the job going when one exits and removes those that hang. Without one,
// RunJob starts -np workers and stops the job at the first failure.
#ifndef COHORT_LAUNCH_JOB_SUPERVISOR_H_
#define COHORT_LAUNCH_JOB_SUPERVISOR_H_

#include <string>

#include "cohort/status.h"
#include "launch/worker_plan.h"

namespace cohort {

class StoreServer;

// What the running job lets its supervisor do. Workers are known by the id in
// WorkerLaunch::rank, which also prefixes their output lines.
class JobControl {
 public:
  virtual ~JobControl() = default;
  // Starts a worker; one that cannot be executed stops the job.
  virtual Status AddWorker(const WorkerLaunch& launch) = 0;
  // Sends `sig` to a running worker's process group (no-op once it exited).
  virtual void Signal(int id, int sig) = 0;
  // Stops the whole job with `exit_code`, saying `message` on stderr.
  virtual void Stop(const std::string& message, int exit_code) = 0;
};

class JobSupervisor {
 public:
  virtual ~JobSupervisor() = default;
  // The address the job's store listens on, which every worker the
  // supervisor starts dials. Called once, before the store starts and
  // before Begin.
  virtual Result<std::string> StoreAddress(const LaunchOptions& options) = 0;
  // Starts the first workers. `store` is the job's rendezvous store,
  // reachable at `address`; `local_path` is the command found in PATH here.
  virtual Status Begin(JobControl& job, const StoreServer& store, const JobAddress& address,
                       const std::string& local_path) = 0;
  // Worker `id` exited with wait status `status`; true when the supervisor
  // handled it and the job goes on.
  virtual bool OnExit(JobControl& job, int id, int status) = 0;
  // Called at least every TickMs() while the job is not stopping.
  virtual void Tick(JobControl& job) = 0;
  virtual int TickMs() const = 0;
};

}  // namespace cohort

#endif  // COHORT_LAUNCH_JOB_SUPERVISOR_H_
