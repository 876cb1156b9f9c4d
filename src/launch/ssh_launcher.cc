// Building the ssh command lines of a multi-host `cohort run`.
#include "launch/ssh_launcher.h"

#include <cstdio>
#include <sstream>

namespace cohort {

Result<std::vector<std::string>> ParseSshCommand(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  if (words.empty()) return Status::InvalidArgument("the ssh command is empty");
  return words;
}

std::vector<std::string> SshArgv(const SshOptions& ssh, const std::string& host,
                                 const std::string& remote_command) {
  std::vector<std::string> argv = ssh.command;
  char timeout[32];
  std::snprintf(timeout, sizeof(timeout), "ConnectTimeout=%d",
                static_cast<int>(ssh.connect_timeout_seconds + 0.999));
  for (const char* option : {"-T", "-x", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=5", "-o",
                             "ServerAliveCountMax=3", "-o"}) {
    argv.push_back(option);
  }
  argv.push_back(timeout);
  if (ssh.port != 0) {
    argv.push_back("-p");
    argv.push_back(std::to_string(ssh.port));
  }
  if (!ssh.identity_file.empty()) {
    argv.push_back("-i");
    argv.push_back(ssh.identity_file);
  }
  argv.push_back("--");
  argv.push_back(host);
  argv.push_back(remote_command);
  return argv;
}

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted += '\'';
  return quoted;
}

std::string RemoteAgentCommandLine(const std::string& cohort_path,
                                   const RemoteAgentOptions& agent) {
  char grace[32];
  std::snprintf(grace, sizeof(grace), "%g", agent.grace_seconds);
  std::vector<std::string> words = {cohort_path,
                                    "run",
                                    "--remote-agent",
                                    "--host",
                                    agent.host,
                                    "--rank",
                                    std::to_string(agent.rank),
                                    "--cwd",
                                    agent.cwd,
                                    "--grace-secs",
                                    grace,
                                    "--"};
  words.insert(words.end(), agent.command.begin(), agent.command.end());
  std::string line = "exec";
  for (const std::string& word : words) {
    line += ' ';
    line += ShellQuote(word);
  }
  return line;
}

}  // namespace cohort
