// The queue's job record: what `cohort submit` asked for, where the job is in
// its life (the state machine below) and how to find its process. Plain
// values, stored by QueueStore and shown by the HTTP API as JSON.
//
//   pending --start--> running --exit 0--> succeeded
//      |                  |----exit != 0, --max-time, lost--> failed
//      |                  |----cancel, then exit--> cancelled
//      |                  '----preempt, then exit--> preempted --start--> running
//      '--cancel--> cancelled                          '--cancel--> cancelled
//
// A job started on the server's own host is `starting` from the moment its
// start is recorded (before any process exists) until its wrapper's pid is:
// a server killed in between finds it so on restart and reconciles it
// through the job's run file (queue/job_process.h) instead of starting it
// twice.
#ifndef COHORT_QUEUE_JOB_RECORD_H_
#define COHORT_QUEUE_JOB_RECORD_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cohort/status.h"
#include "sched/job.h"
#include "sched/policy.h"

namespace cohort::queue {

enum class JobState { kPending, kStarting, kRunning, kSucceeded, kFailed, kCancelled, kPreempted };

// "pending", "starting", "running", "succeeded", "failed", "cancelled",
// "preempted".
const char* StateName(JobState state);
Result<JobState> ParseState(std::string_view text);
// Succeeded, failed or cancelled: the job will not run again.
bool IsFinal(JobState state);
// Pending or preempted: the policy may start it.
bool IsWaiting(JobState state);
// Starting or running: it holds its slots.
bool IsRunning(JobState state);

// Why a running job is being stopped (SIGTERM sent, SIGKILL after the grace).
enum class StopReason { kNone, kCancel, kPreempt, kMaxTime, kLost };
const char* StopReasonName(StopReason reason);      // "", "cancel", "preempt", "max-time", "lost"
StopReason ParseStopReason(std::string_view text);  // unknown text: kNone

struct JobRecord {
  // What was submitted.
  uint64_t id = 0;
  std::string user;
  std::string project;
  std::string pool = "default";
  int slots = 1;
  sched::PriorityClass priority = sched::PriorityClass::kNormal;
  double max_time = 0;  // seconds; 0: no limit
  std::vector<std::string> command;
  std::string cwd;
  std::vector<std::string> env;  // "NAME=value", the submitter's environment
  // Its life, in seconds since the epoch (0: not yet).
  JobState state = JobState::kPending;
  double submitted = 0;
  double started = 0;
  double finished = 0;
  std::string reason;  // why it ended (or was requeued); the policy's reason while pending
  int exit_code = -1;  // 128+N for signal N; -1: none
  int restarts = 0;    // times it was preempted and requeued
  // Where it runs (or last ran, once final) and as which processes.
  std::string host;     // "local" or an agent's name
  int wrapper_pid = 0;  // the detached wrapper that waits for the job and writes its exit file
  std::string wrapper_start;  // its start time (/proc/PID/stat), so a reused pid is not mistaken
  int job_pgid = 0;           // the job's own process group, which signals go to
  std::string slurm_id;       // in a SLURM pool: SLURM's job id
  // A gang over several agents: "AGENT:SLOTS,AGENT:SLOTS" (the first, `host`,
  // runs `cohort run` over all of them); "" when it runs on one host.
  std::string placement;
  // Started on capacity beyond its project's quota: reclaimable first.
  bool borrowed = false;
  StopReason stop = StopReason::kNone;
  double stop_since = 0;  // when SIGTERM was sent
};

// "a1:2,a2:1" <-> {{"a1", 2}, {"a2", 1}}.
std::string FormatPlacement(const std::vector<std::pair<std::string, int>>& hosts);
std::vector<std::pair<std::string, int>> ParsePlacement(const std::string& text);

// The sched module's view of a waiting or running job.
sched::JobSpec ToSpec(const JobRecord& job);

// The API's JSON for a job (`cohort queue --json` prints a list of these):
// id, state, slots, priority, user, project, pool, command, submitted,
// started, finished (null until set), reason, exit_code (null), restarts,
// host, max_time (null), and for a waiting job the policy's `position`,
// `reason` and `estimated_start` from `pending` (null when not given or not
// estimated).
nlohmann::json ToJson(const JobRecord& job, const sched::PendingStatus* pending);

}  // namespace cohort::queue

#endif  // COHORT_QUEUE_JOB_RECORD_H_
