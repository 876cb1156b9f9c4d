// `cohort run`: starts the job's rendezvous store and N worker processes, on
// this host or, with a host list, on other hosts over ssh (ssh_launcher.h);
// relays their output line by line with a "[rank] " prefix, and stops the
// whole job as soon as one worker fails or the launcher is told to stop
// (SIGINT, SIGTERM, SIGHUP). Every process the launcher starts is a local
// one: a worker, or the ssh client that runs a remote worker.
#ifndef COHORT_LAUNCH_LOCAL_LAUNCHER_H_
#define COHORT_LAUNCH_LOCAL_LAUNCHER_H_

#include <map>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "launch/host_list.h"
#include "launch/ssh_launcher.h"

namespace cohort {

struct LaunchOptions {
  int np = 1;                        // number of workers, ranks 0..np-1
  std::vector<std::string> command;  // argv of every worker; [0] is looked up in PATH
  // Added to each worker's environment (over the launcher's own), e.g.
  // COHORT_TIMEOUT from a flag. The per-rank COHORT_* variables win over both.
  std::map<std::string, std::string> extra_env;
  // Time between SIGTERM and SIGKILL when the job is being stopped.
  double grace_seconds = 2.0;
  // Wall-clock limit for the whole job; 0 means none.
  double timeout_seconds = 0;

  // Multi-host jobs. Empty `hosts`: every rank on this host.
  std::vector<HostSlots> hosts;
  SshOptions ssh;
  // Interfaces whose address the store listens on and workers advertise
  // ("eth0" or "eth0,br0": each host takes the first it has). Empty: the
  // route toward the first remote host decides (COHORT_NETWORK_INTERFACE).
  std::string network_interface;
  // Variables remote workers get from the launcher's environment besides
  // COHORT_*: "NAME" (its value here) or "NAME=value" (-x, like mpirun).
  std::vector<std::string> exported_env;
  // The `cohort` binary remote hosts run as the agent; the same path on
  // every host. Empty: this process's own executable.
  std::string cohort_path;
};

// Exit statuses RunJob returns besides the workers' own.
inline constexpr int kExitJobTimedOut = 124;      // timeout_seconds passed
inline constexpr int kExitCannotExecute = 126;    // command found but exec failed
inline constexpr int kExitCommandNotFound = 127;  // command not in PATH
inline constexpr int kExitSshFailed = 255;        // ssh's own status for its errors

// The most ranks one job may have (a documented limit: beyond it the store,
// the mesh and the launcher's own descriptors grow past what is tested).
inline constexpr int kMaxRanks = 16384;

// Whether this host can hold a job of `np` ranks: at most kMaxRanks, and
// within the user's process limit (RLIMIT_NPROC), pid_max and the
// launcher's file descriptors (RLIMIT_NOFILE; the soft limit is raised to the
// hard one when needed, and workers inherit it). Every rank is a process of
// this host: a worker, or the ssh client of a remote one. Errors say which
// limit and how to change it.
Status CheckJobFits(int np);

// Runs the job to the end and returns the launcher's exit status: 0 when every
// worker exits 0; else the status of the first worker to fail (128+N when
// killed by signal N); 128+N when the launcher itself received signal N; or
// one of the kExit* values above. Diagnostics go to stderr, prefixed
// "cohort run: ". A Status is returned only when the launcher itself cannot
// work (bad options, pipes, fork, the store).
//
// SIGINT, SIGTERM and SIGHUP interrupt the start-up too: the launcher stops
// starting workers and forwards the signal to those it started.
//
// Must be called from the main thread of a process that has nothing else to
// do meanwhile: it blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD, ignores
// SIGPIPE, and restores all of that before it returns.
//
// A `supervisor` (job_supervisor.h) starts the workers itself and decides what
// their exits mean; `options.np` then only sizes the limits checked.
class JobSupervisor;
Result<int> RunJob(const LaunchOptions& options, JobSupervisor* supervisor = nullptr);

}  // namespace cohort

#endif  // COHORT_LAUNCH_LOCAL_LAUNCHER_H_
