// Process management for `cohort run`: spawning the workers (or, for ranks
// on other hosts, their ssh clients), relaying their output, waiting for them
// and stopping them.
//
// Process groups. Each worker runs in a process group of its own, and the
// launcher signals whole groups. A Ctrl-C at a terminal goes to the
// terminal's foreground group; that group then holds the launcher but no
// worker, so each worker receives the SIGINT exactly once, forwarded by the
// launcher, instead of once from the terminal and again from the launcher
// (which, for a Python worker, would interrupt its KeyboardInterrupt handling).
// Signalling the group also reaches whatever the worker started itself (a
// shell's children, data-loader processes), so a stopped job leaves nothing
// running. The price: a worker outside the foreground group cannot read the
// terminal, so every worker's stdin is /dev/null.
//
// Remote ranks. The launcher's child is an ssh client running the remote
// agent (remote_agent.h). Its stdin is a pipe: the rank's environment goes
// first, then each signal for the worker as one byte. Signalling the ssh
// client instead would end the connection at once and leave the remote
// worker's end to the agent after the launcher is gone; forwarding the signal
// keeps the ssh client alive until the worker has really exited, so when the
// launcher returns nothing of the job is left on any host it could reach.
// SIGKILL is the exception: the ssh client is killed and the pipe closed,
// and the agent kills the worker's group at once on the end of its stdin.
//
// One thread does all the work: poll(2) over every worker's stdout and
// stderr pipe plus a signalfd that carries SIGCHLD, SIGINT, SIGTERM and
// SIGHUP. Those signals are blocked before the store starts its threads, so
// every thread has them blocked and they arrive only through the signalfd.
#include "launch/local_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "common/deadline.h"
#include "launch/job_supervisor.h"
#include "launch/process_util.h"
#include "launch/worker_plan.h"
#include "net/auth.h"
#include "rendezvous/local_address.h"
#include "rendezvous/store_server.h"

namespace cohort {

namespace {

// Output without a newline is relayed anyway once this much has piled up, so
// a worker printing one endless line cannot grow the launcher without bound.
constexpr size_t kMaxLineBytes = 64 * 1024;
constexpr size_t kReadChunk = 64 * 1024;
// Reading a worker's pipes before reporting its exit stops after this much,
// in case a process it left behind keeps writing.
constexpr size_t kMaxDrainBytes = 1 << 20;
// A failure record quoted in the launcher's report is cut after this much.
constexpr size_t kMaxReasonBytes = 400;

std::string Plural(int n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string FormatSeconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", seconds);
  return buf;
}

std::string SignalName(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGKILL:
      return "SIGKILL";
  }
  return "signal " + std::to_string(sig);
}

// One diagnostic line on stderr, in a single write so it does not interleave
// with relayed worker output.
void Say(const std::string& message) { WriteAll(STDERR_FILENO, "cohort run: " + message + "\n"); }

// Everything a forked child needs, prepared before fork: between fork and
// exec the child of a multi-threaded process may only make async-signal-safe
// calls, so it must not allocate.
struct ChildSetup {
  const char* path;
  char* const* argv;
  char* const* envp;
  int stdin_fd, stdout_fd, stderr_fd;
  int report_fd;  // receives errno when exec fails
  pid_t launcher;
  const SignalRouting* signals;
};

[[noreturn]] void ExecWorker(const ChildSetup& child) {
  ::setpgid(0, 0);  // a group of its own: see the top of this file
  // Die with the launcher rather than run on unsupervised; the getppid check
  // catches a launcher that died before the prctl.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != child.launcher) ::_exit(kExitCannotExecute);
  int error = 0;
  if (::dup2(child.stdin_fd, 0) < 0 || ::dup2(child.stdout_fd, 1) < 0 ||
      ::dup2(child.stderr_fd, 2) < 0) {
    error = errno;
  } else {
    child.signals->Restore();
    ::execve(child.path, child.argv, child.envp);
    error = errno;
  }
  ssize_t ignored = ::write(child.report_fd, &error, sizeof(error));
  (void)ignored;
  ::_exit(error == ENOENT ? kExitCommandNotFound : kExitCannotExecute);
}

// "[3] ". Built by appending: GCC 12 warns falsely (-Wrestrict) about
// "literal" + std::string temporaries at -O3.
std::string RankPrefix(int rank) {
  std::string prefix = "[";
  prefix += std::to_string(rank);
  prefix += "] ";
  return prefix;
}

struct Worker {
  int rank = 0;
  pid_t pid = -1;
  bool reaped = false;
  bool stopped = false;  // by SIGSTOP (or a debugger), not yet continued
  std::string host;      // remote ranks: the host; the process is its ssh client
  Fd control;            // remote ranks: the ssh client's stdin (signals as bytes)
};

// One of a worker's stdout/stderr pipes, read end.
struct OutputPipe {
  int rank = 0;
  int dest = STDOUT_FILENO;  // where its lines go: the launcher's stdout or stderr
  Fd fd;                     // invalid once closed
  std::string partial;       // bytes after the last newline
};

class LocalJob : public JobControl {
 public:
  // `store`, when given, holds the ranks' failure records (abort/<rank>).
  // `supervisor`, when given, decides what a worker's exit means.
  LocalJob(const LaunchOptions& options, const SignalRouting& signals, const StoreServer* store,
           JobSupervisor* supervisor = nullptr);

  // Starts the workers in rank order. A worker whose command cannot be
  // executed counts as the job's first failure and ends the starting.
  Status Start(const std::vector<WorkerLaunch>& launches);
  // Stops the job (SIGTERM, then SIGKILL after the grace period) with exit
  // status `exit_code`, unless it is already stopping.
  void Stop(const std::string& message, int exit_code) override;
  Status AddWorker(const WorkerLaunch& launch) override { return Spawn(launch); }
  void Signal(int id, int sig) override;
  // Relays output and handles signals, exits and deadlines until every
  // started worker has been reaped. Returns the launcher's exit status.
  Result<int> Wait();

 private:
  Status Spawn(const WorkerLaunch& launch);
  void SignalWorker(Worker& worker, int sig);
  std::string Describe(const Worker& worker) const;
  size_t Pump(OutputPipe& pipe);
  void Relay(OutputPipe& pipe, const char* data, size_t size);
  void ClosePipe(OutputPipe& pipe);
  void DrainPipesOf(int rank);
  void ReadSignals();
  void ReadStopSignals();
  void OnSignal(int sig);
  void ReapExited();
  void OnExit(const Worker& worker, int status);
  std::string RootCause(const Worker& first) const;
  void OnDeadlines();
  void SignalAll(int sig);
  void KillAll();
  int Running() const;
  int OpenPipes() const;
  int PollTimeoutMs() const;

  const LaunchOptions& options_;
  const SignalRouting& signals_;
  const StoreServer* store_;
  JobSupervisor* supervisor_;
  std::optional<Deadline> job_deadline_;
  Fd dev_null_;
  std::vector<Worker> workers_;
  std::vector<OutputPipe> pipes_;
  std::vector<char> buffer_;
  bool stopping_ = false;
  bool killed_ = false;
  int exit_code_ = 0;
  std::string stop_signal_ = "SIGTERM";     // what the workers were asked to stop with
  std::optional<Deadline> kill_deadline_;   // SIGKILL then
  std::optional<Deadline> drain_deadline_;  // stop reading pipes then, once all are reaped
};

LocalJob::LocalJob(const LaunchOptions& options, const SignalRouting& signals,
                   const StoreServer* store, JobSupervisor* supervisor)
    : options_(options),
      signals_(signals),
      store_(store),
      supervisor_(supervisor),
      buffer_(kReadChunk) {
  if (options.timeout_seconds > 0) job_deadline_ = Deadline::AfterSeconds(options.timeout_seconds);
}

Status LocalJob::Start(const std::vector<WorkerLaunch>& launches) {
  dev_null_ = Fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!dev_null_.valid()) return Status::IoError("/dev/null: " + ErrnoText(errno));
  for (size_t i = 0; i < launches.size() && !stopping_; ++i) {
    COHORT_RETURN_IF_ERROR(Spawn(launches[i]));
    ReadStopSignals();
  }
  return Status::OK();
}

// Remote ranks' stdin: the environment block now (the pipe is made large
// enough to hold it, so this does not wait for ssh to connect), later signals.
Result<Fd> ControlPipe(const WorkerLaunch& launch, Fd* child_end) {
  Result<Pipe> pipe = MakePipe();
  if (!pipe.ok()) return pipe.status();
  const int needed = static_cast<int>(launch.stdin_data.size()) + 4096;
  if (needed > 65536) ::fcntl(pipe->write.get(), F_SETPIPE_SZ, needed);
  WriteAll(pipe->write.get(), launch.stdin_data);
  ::fcntl(pipe->write.get(), F_SETFL, ::fcntl(pipe->write.get(), F_GETFL) | O_NONBLOCK);
  *child_end = std::move(pipe->read);
  return std::move(pipe->write);
}

Status LocalJob::Spawn(const WorkerLaunch& launch) {
  const int rank = launch.rank;
  const std::string& path = launch.path;
  Fd child_stdin;
  Fd control;
  if (launch.remote()) {
    Result<Fd> pipe = ControlPipe(launch, &child_stdin);
    if (!pipe.ok()) return pipe.status();
    control = std::move(pipe).value();
  }
  Result<Pipe> out = MakePipe();
  if (!out.ok()) return out.status();
  Result<Pipe> err = MakePipe();
  if (!err.ok()) return err.status();
  Result<Pipe> report = MakePipe();
  if (!report.ok()) return report.status();
  std::vector<char*> argv = NullTerminated(launch.argv);
  std::vector<char*> envp = NullTerminated(launch.env);
  const int stdin_fd = launch.remote() ? child_stdin.get() : dev_null_.get();
  const ChildSetup child = {path.c_str(),     argv.data(),      envp.data(),         stdin_fd,
                            out->write.get(), err->write.get(), report->write.get(), ::getpid(),
                            &signals_};
  pid_t pid = ::fork();
  if (pid < 0) return Status::IoError("fork: " + ErrnoText(errno));
  if (pid == 0) ExecWorker(child);
  // The child does the same; whichever runs first, the group exists before
  // the launcher can signal it.
  ::setpgid(pid, pid);
  workers_.push_back({rank, pid, false, false, launch.host, std::move(control)});
  child_stdin.Close();
  out->write.Close();
  err->write.Close();
  report->write.Close();

  // Exec either succeeds, closing the close-on-exec report pipe, or the
  // child writes errno there and exits at once.
  int error = 0;
  ssize_t n;
  do {
    n = ::read(report->read.get(), &error, sizeof(error));
  } while (n < 0 && errno == EINTR);
  if (n == sizeof(error)) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    workers_.back().reaped = true;
    Stop("rank " + std::to_string(rank) + " cannot execute '" + path + "': " + ErrnoText(error),
         error == ENOENT ? kExitCommandNotFound : kExitCannotExecute);
    return Status::OK();
  }
  for (Pipe* pipe : {&*out, &*err}) {
    ::fcntl(pipe->read.get(), F_SETFL, ::fcntl(pipe->read.get(), F_GETFL) | O_NONBLOCK);
  }
  pipes_.push_back({rank, STDOUT_FILENO, std::move(out->read), {}});
  pipes_.push_back({rank, STDERR_FILENO, std::move(err->read), {}});
  return Status::OK();
}

void LocalJob::Relay(OutputPipe& pipe, const char* data, size_t size) {
  const std::string prefix = RankPrefix(pipe.rank);
  std::string lines;
  const char* end = data + size;
  while (data < end) {
    const char* newline = static_cast<const char*>(std::memchr(data, '\n', end - data));
    if (newline == nullptr) {
      pipe.partial.append(data, end);
      break;
    }
    lines += prefix;
    lines += pipe.partial;
    lines.append(data, newline + 1);
    pipe.partial.clear();
    data = newline + 1;
  }
  if (pipe.partial.size() >= kMaxLineBytes) {
    lines += prefix;
    lines += pipe.partial;
    lines += '\n';
    pipe.partial.clear();
  }
  // All complete lines of this read in one write: whole lines reach the
  // launcher's stdout/stderr, never interleaved with another rank's.
  if (!lines.empty()) WriteAll(pipe.dest, lines);
}

size_t LocalJob::Pump(OutputPipe& pipe) {
  ssize_t n = ::read(pipe.fd.get(), buffer_.data(), buffer_.size());
  if (n > 0) {
    Relay(pipe, buffer_.data(), static_cast<size_t>(n));
    return static_cast<size_t>(n);
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
  ClosePipe(pipe);  // end of file, or an error that will not go away
  return 0;
}

void LocalJob::ClosePipe(OutputPipe& pipe) {
  if (!pipe.partial.empty()) {
    // A last line without a newline still gets its own line.
    WriteAll(pipe.dest, RankPrefix(pipe.rank) + pipe.partial + "\n");
    pipe.partial.clear();
  }
  pipe.fd.Close();
}

void LocalJob::DrainPipesOf(int rank) {
  for (OutputPipe& pipe : pipes_) {
    size_t drained = 0;
    while (pipe.rank == rank && pipe.fd.valid() && drained < kMaxDrainBytes) {
      size_t n = Pump(pipe);
      if (n == 0) break;
      drained += n;
    }
  }
}

// During the start-up only SIGINT, SIGTERM and SIGHUP are acted on: they end
// it early. Exits are left to Wait(), which looks at every worker first, so
// the report of a failure does not depend on how far the start-up got.
void LocalJob::ReadStopSignals() {
  signalfd_siginfo info;
  while (::read(signals_.fd(), &info, sizeof(info)) == sizeof(info)) {
    if (info.ssi_signo != SIGCHLD) OnSignal(static_cast<int>(info.ssi_signo));
  }
}

void LocalJob::ReadSignals() {
  signalfd_siginfo info;
  while (::read(signals_.fd(), &info, sizeof(info)) == sizeof(info)) {
    // SIGCHLD needs nothing here: ReapExited looks at every worker, since
    // several exits may have been merged into one SIGCHLD.
    if (info.ssi_signo != SIGCHLD) OnSignal(static_cast<int>(info.ssi_signo));
  }
  ReapExited();
}

void LocalJob::OnSignal(int sig) {
  if (!stopping_) {
    stopping_ = true;
    exit_code_ = 128 + sig;
    stop_signal_ = SignalName(sig);
    Say("received " + SignalName(sig) + "; forwarding it to " +
        Plural(Running(), "running worker"));
    SignalAll(sig);
    kill_deadline_ = Deadline::AfterSeconds(options_.grace_seconds);
  } else if (!killed_) {
    // Asked again while stopping (a second Ctrl-C): no more waiting.
    Say("received " + SignalName(sig) + " while stopping; killing " +
        Plural(Running(), "running worker"));
    KillAll();
  }
}

void LocalJob::ReapExited() {
  std::vector<std::pair<Worker*, int>> exits;
  for (Worker& worker : workers_) {
    if (worker.reaped) continue;
    int status = 0;
    pid_t pid = ::waitpid(worker.pid, &status, WNOHANG | WUNTRACED | WCONTINUED);
    if (pid == 0 || (pid < 0 && errno == EINTR)) continue;
    if (pid > 0 && (WIFSTOPPED(status) || WIFCONTINUED(status))) {
      worker.stopped = WIFSTOPPED(status);
      continue;
    }
    worker.reaped = true;
    worker.control.Close();
    if (pid < 0) continue;  // not our child any more (cannot happen); nothing to report
    exits.emplace_back(&worker, status);
  }
  // Exits seen together: one killed by a signal is the likelier cause than
  // the peers that failed because it vanished.
  std::stable_sort(exits.begin(), exits.end(), [](const auto& a, const auto& b) {
    return WIFSIGNALED(a.second) && !WIFSIGNALED(b.second);
  });
  for (const auto& [worker, status] : exits) OnExit(*worker, status);
}

// "rank 3 (pid 123)" here; "rank 3 on host node2" for a remote rank.
std::string LocalJob::Describe(const Worker& worker) const {
  if (!worker.host.empty())
    return "rank " + std::to_string(worker.rank) + " on host " + worker.host;
  return "rank " + std::to_string(worker.rank) + " (pid " + std::to_string(worker.pid) + ")";
}

void LocalJob::OnExit(const Worker& worker, int status) {
  // Its last output comes before the report of its exit.
  DrainPipesOf(worker.rank);
  if (stopping_) return;  // exits caused by the stop are not news
  if (supervisor_ != nullptr && supervisor_->OnExit(*this, worker.rank, status)) return;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::string what = Describe(worker) + " ";
  int code;
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    what += "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
    code = 128 + sig;
  } else if (!worker.host.empty() && WEXITSTATUS(status) == kExitSshFailed) {
    // ssh's own failure (unreachable host, refused login, lost connection);
    // its message was relayed just above with the rank's prefix.
    what += "could not be reached or lost its connection (ssh exited with status 255)";
    code = kExitSshFailed;
  } else {
    code = WEXITSTATUS(status);
    what += "exited with status " + std::to_string(code);
  }
  if (options_.np > 1) what += " first" + RootCause(worker);
  Stop(what, code);
}

// Why the first rank to fail may only have reacted to another: a stopped
// rank cannot answer, so its peers time out; a rank that failed inside a
// collective published why (abort/<rank>) before its peers noticed.
std::string LocalJob::RootCause(const Worker& first) const {
  for (const Worker& worker : workers_) {
    if (!worker.reaped && worker.stopped) {
      return ", but " + Describe(worker) +
             " is stopped (SIGSTOP or a debugger) and is the likely cause";
    }
  }
  if (store_ == nullptr) return "";
  // Workers publish under their join's prefix, "join<N>/abort/<rank>"
  // (rendezvous/prefixed_store.h); only the join that failed has records.
  constexpr std::string_view kAbort = "/abort/";
  std::string rank, value;
  for (const auto& [key, record] : store_->Published("join")) {
    const size_t at = key.find(kAbort);
    if (at == std::string::npos) continue;
    rank = key.substr(at + kAbort.size());
    value = record;
    break;
  }
  if (rank.empty() || rank == std::to_string(first.rank)) return "";
  std::string reason = value.substr(std::min(value.find('\t') + 1, value.size()));
  if (reason.size() > kMaxReasonBytes) reason = reason.substr(0, kMaxReasonBytes) + "...";
  std::replace(reason.begin(), reason.end(), '\n', ' ');
  std::string who = "rank " + rank;
  for (const Worker& worker : workers_) {
    if (std::to_string(worker.rank) == rank) who = Describe(worker);
  }
  return ", reacting to " + who + ", which failed before it: " + reason;
}

void LocalJob::Stop(const std::string& message, int exit_code) {
  if (stopping_) return;
  stopping_ = true;
  exit_code_ = exit_code;
  const int running = Running();
  if (!message.empty()) {
    Say(running == 0 ? message : message + "; stopping the other " + Plural(running, "worker"));
  }
  SignalAll(SIGTERM);
  kill_deadline_ = Deadline::AfterSeconds(options_.grace_seconds);
}

void LocalJob::OnDeadlines() {
  if (!stopping_ && job_deadline_ && job_deadline_->Expired()) {
    const int running = Running();
    Say("the job did not finish within " + FormatSeconds(options_.timeout_seconds) +
        " s (--timeout-secs); stopping " + Plural(running, "running worker"));
    Stop("", kExitJobTimedOut);
  }
  if (stopping_ && !killed_ && kill_deadline_ && kill_deadline_->Expired() && Running() > 0) {
    std::string ranks;
    for (const Worker& worker : workers_) {
      if (worker.reaped) continue;
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(worker.rank);
      if (!worker.host.empty()) ranks += " (host " + worker.host + ")";
    }
    Say(std::string(Running() == 1 ? "rank " : "ranks ") + ranks + " still running " +
        FormatSeconds(options_.grace_seconds) + " s after " + stop_signal_ + "; sending SIGKILL");
    KillAll();
  }
}

void LocalJob::SignalWorker(Worker& worker, int sig) {
  if (worker.control.valid() && sig != SIGKILL) {
    const char byte = static_cast<char>(sig);
    if (::write(worker.control.get(), &byte, 1) == 1) return;
  }
  // SIGKILL, or the agent no longer listens: end the connection; the agent
  // kills the worker when its stdin closes.
  if (sig == SIGKILL) worker.control.Close();
  if (::kill(-worker.pid, sig) != 0 && errno == ESRCH) ::kill(worker.pid, sig);
}

void LocalJob::Signal(int id, int sig) {
  for (Worker& worker : workers_) {
    if (worker.rank == id && !worker.reaped) SignalWorker(worker, sig);
  }
}

void LocalJob::SignalAll(int sig) {
  for (Worker& worker : workers_) {
    // Only an unreaped worker's pid, and so its group id, is surely still ours.
    if (worker.reaped) continue;
    SignalWorker(worker, sig);
    // A stopped worker acts on the signal only once continued.
    if (worker.stopped && sig != SIGKILL) ::kill(-worker.pid, SIGCONT);
  }
}

void LocalJob::KillAll() {
  SignalAll(SIGKILL);
  killed_ = true;
}

int LocalJob::Running() const {
  int running = 0;
  for (const Worker& worker : workers_) running += worker.reaped ? 0 : 1;
  return running;
}

int LocalJob::OpenPipes() const {
  int open = 0;
  for (const OutputPipe& pipe : pipes_) open += pipe.fd.valid() ? 1 : 0;
  return open;
}

int LocalJob::PollTimeoutMs() const {
  std::optional<Deadline> next;
  auto consider = [&next](const std::optional<Deadline>& d) {
    if (d && (!next || d->at() < next->at())) next = d;
  };
  if (!stopping_) consider(job_deadline_);
  if (!stopping_ && supervisor_ != nullptr) {
    consider(Deadline::After(std::chrono::milliseconds(supervisor_->TickMs())));
  }
  if (stopping_ && !killed_) consider(kill_deadline_);
  consider(drain_deadline_);
  // With no deadline pending, the wait ends with the next output, exit or
  // signal: the job itself may run as long as it needs.
  return next ? next->RemainingMs() : -1;
}

Result<int> LocalJob::Wait() {
  std::vector<pollfd> fds;
  std::vector<OutputPipe*> polled;
  ReapExited();  // exits during the start-up (their SIGCHLD may have been read)
  while (true) {
    OnDeadlines();
    if (supervisor_ != nullptr && !stopping_) supervisor_->Tick(*this);
    if (Running() == 0) {
      // A process a worker left behind may hold its pipes open: give it the
      // grace period to finish writing, then stop listening.
      if (!drain_deadline_) drain_deadline_ = Deadline::AfterSeconds(options_.grace_seconds);
      if (OpenPipes() == 0) break;
      if (drain_deadline_->Expired()) {
        for (OutputPipe& pipe : pipes_) ClosePipe(pipe);
        break;
      }
    }
    fds.assign(1, pollfd{signals_.fd(), POLLIN, 0});
    polled.clear();
    for (OutputPipe& pipe : pipes_) {
      if (!pipe.fd.valid()) continue;
      fds.push_back(pollfd{pipe.fd.get(), POLLIN, 0});
      polled.push_back(&pipe);
    }
    if (::poll(fds.data(), fds.size(), PollTimeoutMs()) < 0) {
      if (errno == EINTR) continue;
      const Status error = Status::IoError("poll: " + ErrnoText(errno));
      KillAll();
      for (Worker& worker : workers_) {
        if (!worker.reaped) ::waitpid(worker.pid, nullptr, 0);
      }
      return error;
    }
    // Output first, so that a worker's last lines precede the report of its exit.
    for (size_t i = 0; i < polled.size(); ++i) {
      if (fds[i + 1].revents != 0) Pump(*polled[i]);
    }
    if (fds[0].revents != 0) ReadSignals();
  }
  return exit_code_;
}

// Descriptors the launcher holds per rank: two output pipes, the store's
// connection from the rank, a remote rank's control pipe.
constexpr rlim_t kFdsPerRank = 4;
constexpr rlim_t kFdsSpare = 64;

std::string LimitText(rlim_t limit) { return std::to_string(static_cast<uint64_t>(limit)); }

}  // namespace

Status CheckJobFits(int np) {
  const std::string what = "-np " + std::to_string(np);
  if (np > kMaxRanks) {
    return Status::InvalidArgument(what + " is above the maximum of " + std::to_string(kMaxRanks) +
                                   " ranks per job");
  }
  const rlim_t ranks = static_cast<rlim_t>(np);
  rlimit nproc{};
  if (::getrlimit(RLIMIT_NPROC, &nproc) == 0 && nproc.rlim_cur != RLIM_INFINITY &&
      ranks >= nproc.rlim_cur) {
    return Status::InvalidArgument(what + " needs " + std::to_string(np) +
                                   " processes on this host (every rank is one) but " +
                                   "this user may run at most " + LimitText(nproc.rlim_cur) +
                                   " (RLIMIT_NPROC; see `ulimit -u`)");
  }
  std::ifstream pid_max_file("/proc/sys/kernel/pid_max");
  uint64_t pid_max = 0;
  if (pid_max_file >> pid_max && ranks + kFdsSpare >= pid_max) {
    return Status::InvalidArgument(what + " is more processes than this host's pid_max (" +
                                   std::to_string(pid_max) + ") allows");
  }
  const rlim_t fds = ranks * kFdsPerRank + kFdsSpare;
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
      fds > nofile.rlim_cur) {
    if (nofile.rlim_max != RLIM_INFINITY && fds > nofile.rlim_max) {
      return Status::InvalidArgument(what + " needs about " + LimitText(fds) +
                                     " file descriptors in the launcher but this user may open "
                                     "at most " +
                                     LimitText(nofile.rlim_max) +
                                     " (RLIMIT_NOFILE; see `ulimit -Hn`)");
    }
    nofile.rlim_cur = fds;
    if (::setrlimit(RLIMIT_NOFILE, &nofile) != 0) {
      return Status::IoError("raising RLIMIT_NOFILE to " + LimitText(fds) + ": " +
                             ErrnoText(errno));
    }
  }
  return Status::OK();
}

Result<int> RunJob(const LaunchOptions& options, JobSupervisor* supervisor) {
  if (options.np < 1) {
    return Status::InvalidArgument("np=" + std::to_string(options.np) + " must be at least 1");
  }
  COHORT_RETURN_IF_ERROR(CheckJobFits(options.np));
  if (options.command.empty()) return Status::InvalidArgument("no command to run");
  if (!(options.grace_seconds >= 0) || !(options.timeout_seconds >= 0)) {
    return Status::InvalidArgument("grace_seconds and timeout_seconds must not be negative");
  }
  // Remote ranks look their command up on their own host (the agent does).
  std::string local_path, ssh_path;
  const RankLocations where = WhereRanksRun(options);
  if (where.here) {
    std::optional<std::string> path = FindExecutable(options.command[0]);
    if (!path) {
      Say("command not found: '" + options.command[0] + "'");
      return kExitCommandNotFound;
    }
    local_path = *path;
  }
  if (where.elsewhere) {
    std::optional<std::string> path = FindExecutable(options.ssh.command.at(0));
    if (!path) {
      Say("ssh client not found: '" + options.ssh.command[0] + "'");
      return kExitCommandNotFound;
    }
    ssh_path = *path;
  }
  // A supervisor places workers on hosts only it knows: it says where.
  Result<std::string> store_host =
      supervisor == nullptr ? StoreListenAddress(options) : supervisor->StoreAddress(options);
  if (!store_host.ok()) return store_host.status();
  COHORT_RETURN_IF_ERROR(EnsureStandardFds());
  SignalRouting signals;
  COHORT_RETURN_IF_ERROR(signals.Install());
  const std::string secret = GenerateSecret();
  Result<std::unique_ptr<StoreServer>> store = StoreServer::Start(*store_host, 0, secret);
  if (!store.ok()) return store.status().WithContext("starting the rendezvous store");
  const JobAddress address{*store_host, (*store)->port(), secret};
  Result<std::vector<WorkerLaunch>> launches =
      supervisor != nullptr ? std::vector<WorkerLaunch>{}
                            : PlanWorkers(options, address, local_path, ssh_path);
  if (!launches.ok()) {
    (*store)->Stop();
    return launches.status();
  }

  LocalJob job(options, signals, store->get(), supervisor);
  Status started = job.Start(*launches);
  if (started.ok() && supervisor != nullptr) {
    started = supervisor->Begin(job, **store, address, local_path);
  }
  // Workers started before a failure must still be stopped and reaped.
  if (!started.ok()) job.Stop("", 1);
  Result<int> exit_code = job.Wait();
  (*store)->Stop();
  if (!started.ok()) return started;
  return exit_code;
}

}  // namespace cohort
