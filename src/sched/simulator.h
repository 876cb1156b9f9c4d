// A discrete-event simulator that replays a trace through the policy
// (sched/policy.h, the same code the queue runs) and measures the outcome.
#ifndef COHORT_SCHED_SIMULATOR_H_
#define COHORT_SCHED_SIMULATOR_H_

#include <map>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "sched/policy.h"
#include "sched/trace.h"

namespace cohort::sched {

struct SimulationConfig {
  int hosts = 16;
  int slots_per_host = 8;
  PolicyConfig policy;
  std::map<std::string, int> quota;  // per project, as QueueState::quota
  double usage_half_life_s = 6 * 3600;
  // A preempted job saves its checkpoint this long after SIGTERM (capped at
  // the grace period), exits and is requeued with the work it had left.
  double checkpoint_s = 30;
};

// Waits of the jobs of one gang-size range [min_slots, max_slots].
struct WaitBucket {
  int min_slots = 0;
  int max_slots = 0;
  int jobs = 0;
  double mean_wait = 0;
  double p99_wait = 0;
};

// Waits of the jobs of one priority class.
struct PriorityWait {
  PriorityClass priority = PriorityClass::kNormal;
  int jobs = 0;
  double mean_wait = 0;
  double p99_wait = 0;
  double p99_wait_largest = 0;  // of its largest gangs (as SimulationResult's)
};

struct SimulationResult {
  std::string policy;
  // Busy slot-seconds / available slot-seconds, over the time in which at
  // least one job was waiting (the saturated time; idle slots then are the
  // policy's doing).
  double utilization = 0;
  double mean_jct = 0;  // completion time (finish - submit), seconds
  double p99_jct = 0;
  // p99 of the wait (first start - submit) of the largest gangs: the jobs
  // asking for at least half the largest request in the trace.
  double p99_wait_largest = 0;
  // Jain's index between users of the slot-seconds each received (divided
  // by its share) over the time in which every user had a job waiting; over
  // the whole run when that never happened.
  double jain = 1;
  double makespan = 0;  // last finish - first submit
  int preemptions = 0;
  int passes = 0;
  std::vector<WaitBucket> waits;             // by gang size: 1, 2-4, 5-8, 9-16, 17-32, 33-64, 65+
  std::vector<PriorityWait> priority_waits;  // high, normal, low (classes with jobs)
};

// Replays `trace` under `config`. Fails on a job larger than the pool.
Result<SimulationResult> Simulate(const std::vector<TraceJob>& trace,
                                  const SimulationConfig& config);

// The p-quantile (0..1) of `values` by the nearest-rank method; 0 when empty.
double Percentile(std::vector<double> values, double p);

}  // namespace cohort::sched

#endif  // COHORT_SCHED_SIMULATOR_H_
