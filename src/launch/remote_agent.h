// The remote end of a multi-host `cohort run`: ssh starts
// `cohort run --remote-agent ...` on a worker's host, and the agent starts the
// worker there and ties its life to the launcher's.
//
// The agent's stdin is a pipe from the launcher (through ssh). It carries,
// first, an environment block: "NAME=value\0" entries ending with an empty
// entry ("\0"). The job secret and the per-rank COHORT_* variables travel this
// way, so they appear on no command line (ps on either host shows none of
// them). After the block, each byte is a signal number the agent forwards to
// the worker's process group (how SIGINT/SIGTERM reach remote workers). End of
// file means the launcher or the connection is gone: the agent sends the
// worker's group SIGTERM, then SIGKILL after the grace period, so no worker
// outlives its launcher on any host.
//
// The worker's stdout and stderr are the agent's (the ssh channel); the agent
// exits with the worker's status, 128+N when it was killed by signal N, after
// killing whatever the worker left running in its process group.
#ifndef COHORT_LAUNCH_REMOTE_AGENT_H_
#define COHORT_LAUNCH_REMOTE_AGENT_H_

#include <map>
#include <string>
#include <vector>

#include "cohort/status.h"

namespace cohort {

struct RemoteAgentOptions {
  std::string host;  // as the launcher names it, for messages
  int rank = 0;
  std::string cwd;  // the launcher's working directory, entered before the start
  double grace_seconds = 2.0;
  // How long the environment block may take to arrive.
  double env_timeout_seconds = 60.0;
  std::vector<std::string> command;  // argv; [0] is looked up in PATH
};

// The environment block the agent reads from stdin.
std::string EncodeEnvBlock(const std::map<std::string, std::string>& env);

// Runs the worker to the end; returns the agent's exit status. Messages go to
// stderr, prefixed "cohort run: " and naming the rank and host.
int RunRemoteAgent(const RemoteAgentOptions& options);

}  // namespace cohort

#endif  // COHORT_LAUNCH_REMOTE_AGENT_H_
