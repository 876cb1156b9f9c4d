// Where the sweep controller's trials run: on this host (a forked `cohort
// run` launcher per trial, local_trials.cc) or as jobs of a `cohort server`
// queue (sweep/queue/queued_trials.h). The controller decides what runs and
// hears the reports; an executor only starts trials' jobs, says when they
// end, and stops them.
#ifndef COHORT_SWEEP_TRIAL_EXECUTOR_H_
#define COHORT_SWEEP_TRIAL_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cohort/status.h"

namespace cohort::sweep {

// One run of a trial: `workers` ranks of the spec's command with these
// variables (COHORT_SWEEP_*) added to the controller's environment.
struct TrialLaunch {
  int64_t trial = 0;
  std::string log;  // where the job's output goes (or is copied when it ends)
  std::map<std::string, std::string> env;
};

// A trial's job that ended.
struct TrialEnd {
  int64_t handle = 0;
  int code = 0;         // its exit status (128+N for signal N); -1: it never ran
  bool ok = false;      // it exited 0 by itself
  std::string failure;  // when !ok, why: "exit status 3", "job 7 failed: exceeded --max-time"
};

class TrialExecutor {
 public:
  virtual ~TrialExecutor() = default;
  // Starts the trial's job; returns its handle (a pid, a queue job id).
  virtual Result<int64_t> Start(const TrialLaunch& launch) = 0;
  // The jobs that ended since the last call; does not block.
  virtual Result<std::vector<TrialEnd>> Reap() = 0;
  // The jobs that ended a run without ending (the queue preempted them: they
  // start again by themselves, from their checkpoint) since the last call.
  virtual std::vector<int64_t> Restarted() { return {}; }
  // Asks every job still running to stop and waits for them to end, at most
  // `wait_s` seconds (a job left running is stopped harder or left to end).
  virtual void StopAll(double wait_s) = 0;

  // Jobs that outlive the controller (the queue's): each is recorded in the
  // journal with `Where()` so that a restarted controller follows it again
  // through Adopt() instead of starting the trial twice.
  virtual bool Durable() const { return false; }
  virtual std::string Where() const { return ""; }
  // Follows a job a previous controller started; `log` as in TrialLaunch.
  virtual Status Adopt(int64_t /*handle*/, const std::string& /*log*/) {
    return Status::Internal("this executor cannot follow another controller's jobs");
  }
};

// Trials on this host: each a job of `workers` ranks started through the
// launcher in a forked child, killed with the controller (PR_SET_PDEATHSIG).
// `inherited` names the descriptors the child must close (the report server's).
std::unique_ptr<TrialExecutor> LocalTrialExecutor(int workers, std::vector<std::string> command,
                                                  double trial_timeout,
                                                  std::function<std::vector<int>()> inherited);

// Makes the executor when the sweep starts (ControllerOptions::executor;
// empty: LocalTrialExecutor).
using TrialExecutorFactory = std::function<Result<std::unique_ptr<TrialExecutor>>()>;

}  // namespace cohort::sweep

#endif  // COHORT_SWEEP_TRIAL_EXECUTOR_H_
