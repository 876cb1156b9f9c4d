// The agent that runs one worker on a remote host for `cohort run`; see
// remote_agent.h for the protocol on its stdin.
#include "launch/remote_agent.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "common/deadline.h"
#include "launch/local_launcher.h"
#include "launch/process_util.h"

namespace cohort {

namespace {

// An environment block larger than this is not one the launcher sent.
constexpr size_t kMaxEnvBlockBytes = 16 << 20;

void Say(const RemoteAgentOptions& o, const std::string& message) {
  WriteAll(STDERR_FILENO, "cohort run: rank " + std::to_string(o.rank) + " on host " + o.host +
                              ": " + message + "\n");
}

// Reads the environment block from `fd`; bytes that follow it (signals sent
// early) are left in `rest`.
Result<std::vector<std::string>> ReadEnvBlock(int fd, Deadline deadline, std::string* rest) {
  std::string data;
  std::vector<std::string> entries;
  size_t pos = 0;
  char buf[65536];
  while (true) {
    for (size_t zero; (zero = data.find('\0', pos)) != std::string::npos;) {
      std::string entry = data.substr(pos, zero - pos);
      pos = zero + 1;
      if (entry.empty()) {
        *rest = data.substr(pos);
        return entries;
      }
      if (entry.find('=') == std::string::npos || entry[0] == '=') {
        return Status::InvalidArgument("malformed environment entry from the launcher");
      }
      entries.push_back(std::move(entry));
    }
    if (data.size() > kMaxEnvBlockBytes) {
      return Status::InvalidArgument("the environment from the launcher exceeds 16 MiB");
    }
    pollfd readable = {fd, POLLIN, 0};
    const int ready = ::poll(&readable, 1, deadline.RemainingMs());
    if (ready == 0) return Status::Timeout("the launcher sent no environment in time");
    if (ready < 0 && errno == EINTR) continue;
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) return Status::IoError("the launcher went away before sending the environment");
    if (n < 0 && errno != EINTR) return Status::IoError("reading stdin: " + ErrnoText(errno));
    if (n > 0) data.append(buf, static_cast<size_t>(n));
  }
}

struct WorkerExit {
  int code = 0;
  int signal = 0;        // nonzero when killed by a signal
  bool stopped = false;  // the agent was asked to stop it
};

class AgentLoop {
 public:
  AgentLoop(const RemoteAgentOptions& o, const SignalRouting& signals, pid_t worker)
      : o_(o), signals_(signals), worker_(worker) {}

  // Forwards signals and watches stdin until the worker exits.
  WorkerExit Run(const std::string& early_bytes);

 private:
  void OnControlBytes(const char* data, size_t size);
  void OnLauncherGone();
  void Signal(int sig) { ::kill(-worker_, sig); }
  std::optional<WorkerExit> Reaped();
  WorkerExit ExitFrom(int wait_status);

  const RemoteAgentOptions& o_;
  const SignalRouting& signals_;
  const pid_t worker_;
  bool stdin_open_ = true;
  bool stop_requested_ = false;
  std::optional<Deadline> kill_deadline_;
};

void AgentLoop::OnControlBytes(const char* data, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    const int sig = static_cast<unsigned char>(data[i]);
    if (sig < 1 || sig >= NSIG) continue;
    stop_requested_ = true;
    Signal(sig);
  }
}

void AgentLoop::OnLauncherGone() {
  stdin_open_ = false;
  if (stop_requested_) {
    // The launcher asked the worker to stop and has now given up waiting.
    Signal(SIGKILL);
    return;
  }
  Say(o_, "lost the launcher (connection closed); stopping the worker");
  Signal(SIGTERM);
  kill_deadline_ = Deadline::AfterSeconds(o_.grace_seconds);
}

std::optional<WorkerExit> AgentLoop::Reaped() {
  int status = 0;
  const pid_t pid = ::waitpid(worker_, &status, WNOHANG);
  if (pid != worker_) return std::nullopt;
  return ExitFrom(status);
}

WorkerExit AgentLoop::ExitFrom(int status) {
  // Whatever the worker started in its group goes with it.
  Signal(SIGKILL);
  const bool stopped = stop_requested_ || !stdin_open_;
  if (WIFSIGNALED(status)) return WorkerExit{128 + WTERMSIG(status), WTERMSIG(status), stopped};
  return WorkerExit{WEXITSTATUS(status), 0, stopped};
}

WorkerExit AgentLoop::Run(const std::string& early_bytes) {
  OnControlBytes(early_bytes.data(), early_bytes.size());
  char buf[256];
  while (true) {
    if (kill_deadline_ && kill_deadline_->Expired()) {
      Signal(SIGKILL);
      kill_deadline_.reset();
    }
    pollfd fds[2] = {{signals_.fd(), POLLIN, 0}, {stdin_open_ ? 0 : -1, POLLIN, 0}};
    const int timeout = kill_deadline_ ? kill_deadline_->RemainingMs() : -1;
    if (::poll(fds, 2, timeout) < 0) {
      if (errno == EINTR) continue;
      // Nothing left to watch with: end the worker rather than leave it.
      Say(o_, "poll: " + ErrnoText(errno) + "; killing the worker");
      stop_requested_ = true;
      Signal(SIGKILL);
      int status = 0;
      while (::waitpid(worker_, &status, 0) < 0 && errno == EINTR) {
      }
      return ExitFrom(status);
    }
    if (fds[1].revents != 0) {
      const ssize_t n = ::read(0, buf, sizeof(buf));
      if (n > 0) {
        OnControlBytes(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        OnLauncherGone();
      }
    }
    if (fds[0].revents != 0) {
      signalfd_siginfo info;
      while (::read(signals_.fd(), &info, sizeof(info)) == sizeof(info)) {
        if (info.ssi_signo == SIGCHLD) continue;
        // sshd hanging up, or someone signalling the agent: pass it on.
        stop_requested_ = true;
        Signal(static_cast<int>(info.ssi_signo));
        if (!kill_deadline_) kill_deadline_ = Deadline::AfterSeconds(o_.grace_seconds);
      }
      if (std::optional<WorkerExit> exit = Reaped()) return *exit;
    }
  }
}

}  // namespace

std::string EncodeEnvBlock(const std::map<std::string, std::string>& env) {
  std::string block;
  for (const auto& [name, value] : env) {
    block += name;
    block += '=';
    block += value;
    block += '\0';
  }
  block += '\0';
  return block;
}

int RunRemoteAgent(const RemoteAgentOptions& o) {
  if (o.command.empty()) {
    Say(o, "no command to run");
    return kExitCommandNotFound;
  }
  SignalRouting signals;
  if (Status s = signals.Install(); !s.ok()) {
    Say(o, s.message());
    return 1;
  }
  std::string early_bytes;
  Result<std::vector<std::string>> env =
      ReadEnvBlock(0, Deadline::AfterSeconds(o.env_timeout_seconds), &early_bytes);
  if (!env.ok()) {
    Say(o, env.status().message());
    return 1;
  }
  // The worker inherits the agent's environment (what sshd set up) with the
  // launcher's variables on top; PATH among them decides the lookup below.
  for (const std::string& entry : *env) {
    const size_t eq = entry.find('=');
    ::setenv(entry.substr(0, eq).c_str(), entry.substr(eq + 1).c_str(), 1);
  }
  if (!o.cwd.empty() && ::chdir(o.cwd.c_str()) != 0) {
    Say(o, "cannot enter the working directory '" + o.cwd + "': " + ErrnoText(errno));
    return 1;
  }
  std::optional<std::string> path = FindExecutable(o.command[0]);
  if (!path) {
    Say(o, "command not found: '" + o.command[0] + "'");
    return kExitCommandNotFound;
  }
  std::vector<char*> argv = NullTerminated(o.command);
  const pid_t agent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    Say(o, "fork: " + ErrnoText(errno));
    return 1;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != agent) ::_exit(kExitCannotExecute);
    signals.Restore();
    ::execv(path->c_str(), argv.data());
    Say(o, "cannot execute '" + *path + "': " + ErrnoText(errno));  // the agent is single-threaded
    ::_exit(kExitCannotExecute);
  }
  ::setpgid(pid, pid);
  AgentLoop loop(o, signals, pid);
  const WorkerExit exit = loop.Run(early_bytes);
  if (exit.signal != 0 && !exit.stopped) {
    Say(o, "the worker (pid " + std::to_string(pid) + ") was killed by signal " +
               std::to_string(exit.signal) + " (" + strsignal(exit.signal) + ")");
  }
  return exit.code;
}

}  // namespace cohort
