// How `cohort run` starts a rank on another host: an OpenSSH client in batch
// mode that runs `cohort run --remote-agent ...` there (remote_agent.h). The
// ssh client is a local process of the launcher like any local worker; its
// stdin carries the rank's environment, then signals.
#ifndef COHORT_LAUNCH_SSH_LAUNCHER_H_
#define COHORT_LAUNCH_SSH_LAUNCHER_H_

#include <string>
#include <vector>

#include "cohort/status.h"
#include "launch/remote_agent.h"

namespace cohort {

struct SshOptions {
  // The client and any options of the user's, e.g. {"ssh", "-F", "cfg"}
  // (COHORT_SSH_COMMAND, split at spaces).
  std::vector<std::string> command = {"ssh"};
  int port = 0;                         // --ssh-port; 0: ssh's own default
  std::string identity_file;            // --ssh-identity-file
  double connect_timeout_seconds = 10;  // --ssh-connect-timeout
};

// Splits COHORT_SSH_COMMAND / --ssh-command at whitespace.
Result<std::vector<std::string>> ParseSshCommand(const std::string& text);

// argv running `remote_command` (a shell command line) on `host`: no
// terminal, no password prompts, a bounded connect, and keepalives so a host
// that goes away mid-job is noticed (3 missed replies 5 s apart).
std::vector<std::string> SshArgv(const SshOptions& ssh, const std::string& host,
                                 const std::string& remote_command);

// The command line that starts the agent for one rank: `cohort_path` (the
// same path on every host, like a shared install) with the agent's options,
// each word quoted for the remote shell.
std::string RemoteAgentCommandLine(const std::string& cohort_path, const RemoteAgentOptions& agent);

// `text` in single quotes for a POSIX shell.
std::string ShellQuote(const std::string& text);

}  // namespace cohort

#endif  // COHORT_LAUNCH_SSH_LAUNCHER_H_
