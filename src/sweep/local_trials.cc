// Trials on this host (trial_executor.h): a forked child per trial runs the
// launcher (launch/local_launcher.h), its output in the trial's log.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

#include "launch/local_launcher.h"
#include "sweep/trial_executor.h"

namespace cohort::sweep {

namespace {

class LocalTrials : public TrialExecutor {
 public:
  LocalTrials(int workers, std::vector<std::string> command, double trial_timeout,
              std::function<std::vector<int>()> inherited)
      : inherited_(std::move(inherited)) {
    launch_.np = workers;
    launch_.command = std::move(command);
    launch_.timeout_seconds = trial_timeout;
  }

  Result<int64_t> Start(const TrialLaunch& t) override {
    LaunchOptions launch = launch_;
    launch.extra_env = t.env;
    int log_fd = ::open(t.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) return Status::IoError("cannot open trial log '" + t.log + "'");
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
      ::close(log_fd);
      return Status::IoError("fork failed for trial " + std::to_string(t.trial));
    }
    if (pid == 0) RunTrialJob(launch, log_fd, parent);  // never returns
    ::close(log_fd);
    children_.insert(pid);
    return static_cast<int64_t>(pid);
  }

  Result<std::vector<TrialEnd>> Reap() override {
    std::vector<TrialEnd> ended;
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return ended;
      if (children_.erase(pid) == 0) continue;
      TrialEnd end;
      end.handle = pid;
      end.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      end.ok = end.code == 0;
      if (!end.ok) end.failure = "exit status " + std::to_string(end.code);
      ended.push_back(end);
    }
  }

  // SIGTERM, and SIGKILL to those still there after `wait_s`.
  void StopAll(double wait_s) override {
    for (pid_t pid : children_) ::kill(pid, SIGTERM);
    auto deadline = Deadline(wait_s);
    while (!children_.empty()) {
      int status;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid > 0) children_.erase(pid);
      if (pid < 0) break;
      if (std::chrono::steady_clock::now() > deadline) {
        for (pid_t p : children_) ::kill(p, SIGKILL);
        deadline = Deadline(wait_s);
      }
      if (pid == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

 private:
  static std::chrono::steady_clock::time_point Deadline(double seconds) {
    return std::chrono::steady_clock::now() +
           std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  }

  // In the forked child: the job's launcher, stopped when the controller dies.
  [[noreturn]] void RunTrialJob(const LaunchOptions& launch, int log_fd, pid_t parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(143);  // the controller died before prctl
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    if (inherited_) {
      for (int fd : inherited_()) ::close(fd);
    }
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    Result<int> status = RunJob(launch);
    if (!status.ok())
      std::fprintf(stderr, "cohort sweep: %s\n", status.status().ToString().c_str());
    std::fflush(nullptr);
    ::_exit(status.ok() ? *status : 1);
  }

  LaunchOptions launch_;
  std::function<std::vector<int>()> inherited_;
  std::set<pid_t> children_;
};

}  // namespace

std::unique_ptr<TrialExecutor> LocalTrialExecutor(int workers, std::vector<std::string> command,
                                                  double trial_timeout,
                                                  std::function<std::vector<int>()> inherited) {
  return std::make_unique<LocalTrials>(workers, std::move(command), trial_timeout,
                                       std::move(inherited));
}

}  // namespace cohort::sweep
