// Process plumbing shared by the launcher (local_launcher.cc) and the agent
// that runs a worker on a remote host (remote_agent.cc): owned descriptors,
// pipes, PATH lookup and routing of signals into a signalfd.
#ifndef COHORT_LAUNCH_PROCESS_UTIL_H_
#define COHORT_LAUNCH_PROCESS_UTIL_H_

#include <signal.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cohort/status.h"
#include "common/fd.h"

namespace cohort {

// Writes all of `data`. A write error (the reader went away: EPIPE, with
// SIGPIPE ignored) drops the output rather than stopping the job. This waits
// as long as the reader makes it, like any program writing to its stdout.
void WriteAll(int fd, const std::string& data);

struct Pipe {
  Fd read;
  Fd write;
};

// Routes the signals the launcher handles into a signalfd while the object
// lives, and puts the signal mask and dispositions back afterwards.
class SignalRouting {
 public:
  SignalRouting() = default;
  SignalRouting(const SignalRouting&) = delete;
  SignalRouting& operator=(const SignalRouting&) = delete;
  ~SignalRouting() { Restore(); }

  Status Install();
  int fd() const { return fd_.get(); }

  // Puts back the mask and dispositions the launcher started with.
  // Async-signal-safe: a forked worker calls it before exec too, since both
  // survive exec.
  void Restore() const {
    if (!installed_) return;
    ::sigaction(SIGPIPE, &old_pipe_, nullptr);
    ::sigaction(SIGCHLD, &old_chld_, nullptr);
    ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }

 private:
  bool installed_ = false;
  sigset_t old_mask_;
  struct sigaction old_pipe_ = {};
  struct sigaction old_chld_ = {};
  Fd fd_;
};

Result<Pipe> MakePipe();

// Opens /dev/null on any of fds 0-2 that is closed, so that no pipe opened
// later lands there: a child's dup2 onto 0-2 relies on its sources being
// other descriptors.
Status EnsureStandardFds();

// What execve should run for `name`: `name` itself when it holds a '/', else
// the first executable regular file of that name in PATH, as execvp searches.
std::optional<std::string> FindExecutable(const std::string& name);

// Pointers into `strings`, null-terminated, for execve.
std::vector<char*> NullTerminated(const std::vector<std::string>& strings);

}  // namespace cohort

#endif  // COHORT_LAUNCH_PROCESS_UTIL_H_
