// What the launcher starts for each rank: the worker itself on this host, or
// an ssh client that runs the remote agent on the rank's host, with the
// rank's environment (COHORT_RANK, COHORT_STORE_ADDR, ...).
#ifndef COHORT_LAUNCH_WORKER_PLAN_H_
#define COHORT_LAUNCH_WORKER_PLAN_H_

#include <string>
#include <vector>

#include "cohort/status.h"
#include "launch/local_launcher.h"

namespace cohort {

struct WorkerLaunch {
  int rank = 0;
  std::string path;               // executable to exec
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // the complete environment, "NAME=value"
  std::string host;               // empty: this host, without ssh
  // Remote ranks: the agent's environment block (remote_agent.h), written to
  // the ssh client's stdin, which then stays open to carry signals.
  std::string stdin_data;
  bool remote() const { return !host.empty(); }
};

struct JobAddress {
  std::string store_host;  // where the launcher's store listens
  int store_port = 0;
  std::string secret;
};

// One launch per rank, in rank order. `local_path` is the command found in
// PATH here (used by local ranks), `ssh_path` the ssh client (remote ranks).
// Errors: bad placement (more ranks than slots) or -x entries.
Result<std::vector<WorkerLaunch>> PlanWorkers(const LaunchOptions& options, const JobAddress& job,
                                              const std::string& local_path,
                                              const std::string& ssh_path);

// Whether some rank runs on this host without ssh, and whether some runs on
// another host. Both false when the ranks do not fit the hosts' slots.
struct RankLocations {
  bool here = false;
  bool elsewhere = false;
};
RankLocations WhereRanksRun(const LaunchOptions& options);

// Where the store must listen so every host of the job reaches it: 127.0.0.1
// when all ranks are local, else the address of options.network_interface,
// else this host's source address toward the first remote host.
Result<std::string> StoreListenAddress(const LaunchOptions& options);

}  // namespace cohort

#endif  // COHORT_LAUNCH_WORKER_PLAN_H_
