// A queue job's processes on this host, started so that they outlive the
// server: a wrapper in a session of its own waits for the job (in a process
// group of its own, which signals go to) and writes the job's exit status to
// a file. The server (or a restarted one) follows the job through the
// wrapper's pid and start time and that file, never as its child.
#ifndef COHORT_QUEUE_JOB_PROCESS_H_
#define COHORT_QUEUE_JOB_PROCESS_H_

#include <optional>
#include <string>
#include <vector>

#include "cohort/status.h"

namespace cohort::queue {

struct JobLaunch {
  std::vector<std::string> command;  // run by /bin/sh's exec, searching the job's PATH
  std::vector<std::string> env;      // "NAME=value": the job's whole environment
  std::string cwd;
  std::string log_path;   // stdout and stderr, appended
  std::string exit_path;  // written (atomically) when the job ends: "exit N\n"
  // false: detached, the job outlives its starter (the server's jobs). true:
  // the wrapper is the starter's child and it and the job are SIGKILLed when
  // the starter dies (an agent's jobs: a dead agent's work is requeued
  // elsewhere, so it must not go on). The starter reaps the wrapper.
  bool tied_to_starter = false;
};

struct JobProcess {
  int wrapper_pid = 0;
  std::string wrapper_start;  // "" when the wrapper already ended
  int job_pgid = 0;
};

// Starts the job (double fork and setsid when detached). Fails only when the
// processes could not be created; a command that does not exist runs and
// exits 127 with the shell's message in the log.
Result<JobProcess> StartJob(const JobLaunch& launch);

// The exit status in `exit_path` (128+N for a signal), or nullopt when the
// file is absent or incomplete.
std::optional<int> ReadExitFile(const std::string& exit_path);

// Whether the wrapper `pid` that started at `start` still runs (not a zombie,
// not a later process that reuses the pid).
bool WrapperAlive(int pid, const std::string& start);

// The start time of process `pid` (field 22 of /proc/PID/stat), "" if none.
std::string ProcessStartTime(int pid);

// Sends `signal` to the job's process group; a group that is gone is fine.
void SignalJob(int pgid, int signal);

}  // namespace cohort::queue

#endif  // COHORT_QUEUE_JOB_PROCESS_H_
