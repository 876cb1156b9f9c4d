// A queue job's processes on this host, started so that they outlive the
// server: a wrapper in a session of its own waits for the job (in a process
// group of its own, which signals go to) and writes the job's exit status to
// a file. The server (or a restarted one) follows the job through the
// wrapper's pid and start time and that file, never as its child.
//
// A job is started at most once, whenever its starter dies: the wrapper
// holds a lock on the job's run file for its whole life and writes its pid
// and the job's process group there before the job may run (the job waits
// for that), so a restarted server tells "never started" (no lock, no pids)
// from "started, follow it" (locked) and "started, wrapper gone" (pids, no
// lock) by reading the file (ReadRunFile).
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
  // The run file (see above); "" for none. Created (truncated) and locked
  // here, before the first fork: a file another wrapper still locks fails
  // the start.
  std::string run_path;
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

// What a job's run file says.
struct RunFile {
  bool exists = false;
  bool locked = false;  // its wrapper (or the starter creating it) still runs
  int wrapper_pid = 0;  // 0: the job was not forked yet
  int job_pgid = 0;
};
RunFile ReadRunFile(const std::string& path);

// Kills what is left of a job whose wrapper `wrapper_pid` is gone: the
// processes of group `pgid` if they are still in the wrapper's session
// (a group of that number in another session is someone else's). Returns
// whether any was found.
bool KillOrphanedJob(int pgid, int wrapper_pid);

}  // namespace cohort::queue

#endif  // COHORT_QUEUE_JOB_PROCESS_H_
