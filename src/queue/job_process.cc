// Starting a job detached, and following it through its wrapper's pid and
// exit file. Between fork and exec only async-signal-safe calls are made:
// the server is multithreaded, so everything the children need is prepared
// before the first fork.
#include "queue/job_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <vector>

#include "launch/process_util.h"

namespace cohort::queue {
namespace {

// Async-signal-safe: writes `text` (NUL-terminated) to `fd`.
void WriteText(int fd, const char* text) {
  size_t n = 0;
  while (text[n] != '\0') ++n;
  while (n > 0) {
    ssize_t w = ::write(fd, text, n);
    if (w <= 0 && errno != EINTR) return;
    if (w > 0) {
      text += w;
      n -= static_cast<size_t>(w);
    }
  }
}

// Async-signal-safe decimal formatting of a non-negative number.
void FormatInt(int value, char* out) {
  char digits[16];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0 && n < 15);
  for (int i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  out[n] = '\0';
}

// Fields 3 (state) to 22 (start time) of /proc/PID/stat, in order; empty
// when there is no such process.
std::vector<std::string> StatFields(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');  // the command name may hold spaces and ')'
  if (paren == std::string::npos) return {};
  std::istringstream fields(stat.substr(paren + 1));
  std::vector<std::string> out;
  std::string field;
  while (out.size() < 20 && fields >> field) out.push_back(field);
  if (out.size() < 20) return {};
  return out;
}

bool Dead(const std::vector<std::string>& fields) {
  return fields.empty() || fields[0] == "Z" || fields[0] == "X";
}

void CloseFrom(int lowest) { ::close_range(static_cast<unsigned>(lowest), ~0U, 0); }

// Async-signal-safe: closes every descriptor from 3 up but those in `keep`.
// A forked child holds all of the server's until then, the lock of the
// tracking store's file among them, which must go when the server does.
void CloseAllBut(std::initializer_list<int> keep) {
  int fds[8];
  int n = 0;
  for (int fd : keep) {
    if (fd < 3 || n == 8) continue;
    int i = n++;
    for (; i > 0 && fds[i - 1] > fd; --i) fds[i] = fds[i - 1];
    fds[i] = fd;
  }
  unsigned next = 3;
  for (int i = 0; i < n; ++i) {
    const unsigned fd = static_cast<unsigned>(fds[i]);
    if (fd > next) ::close_range(next, fd - 1, 0);
    if (fd + 1 > next) next = fd + 1;
  }
  CloseFrom(static_cast<int>(next));
}

void SetDisposition(int signal, void (*handler)(int)) {
  struct sigaction action = {};
  action.sa_handler = handler;
  ::sigaction(signal, &action, nullptr);
}

struct ChildArgs {
  std::vector<char*> argv;
  std::vector<char*> envp;
  const char* cwd;
  const char* exit_path;
  const char* exit_tmp;
  int null_fd;
  int log_fd;
  int report_fd;
  int run_fd;  // -1: no run file
  // The job runs only once the wrapper has recorded it: one byte from the
  // wrapper, or EOF when the wrapper died first.
  int gate_read;
  int gate_write;
  bool tied;
};

// A tied process dies with its parent; `parent` is the pid it must still have.
void DieWithParent(const ChildArgs& a, pid_t parent) {
  if (!a.tied) return;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);  // the parent died before prctl
}

[[noreturn]] void RunJob(const ChildArgs& a, pid_t wrapper) {
  CloseAllBut({a.gate_read});
  DieWithParent(a, wrapper);
  ::setpgid(0, 0);
  char go = 0;
  ssize_t n = 0;
  while ((n = ::read(a.gate_read, &go, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1) {
    WriteText(2, "cohort queue: the job's wrapper ended before the job could start\n");
    ::_exit(127);
  }
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD}) SetDisposition(s, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  CloseFrom(3);
  if (a.cwd[0] != '\0' && ::chdir(a.cwd) != 0) {
    WriteText(2, "cohort queue: cannot enter the job's directory ");
    WriteText(2, a.cwd);
    WriteText(2, "\n");
    ::_exit(127);
  }
  ::execve("/bin/sh", a.argv.data(), a.envp.data());
  WriteText(2, "cohort queue: cannot run /bin/sh\n");
  ::_exit(127);
}

// The wrapper: a session of its own, deaf to the signals meant for the job,
// waits for the job and leaves its exit status in a file.
// The descriptors a child of StartJob uses.
void CloseAllButOurs(const ChildArgs& a) {
  CloseAllBut({a.null_fd, a.log_fd, a.report_fd, a.run_fd, a.gate_read, a.gate_write});
}

[[noreturn]] void RunWrapper(const ChildArgs& a, pid_t starter) {
  CloseAllButOurs(a);
  DieWithParent(a, starter);
  ::setsid();
  // Blocked, not yet ignored, across the fork: a SIGTERM sent to the job
  // before it reset its dispositions stays pending until it unblocks.
  sigset_t stops;
  sigemptyset(&stops);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stops, s);
  ::sigprocmask(SIG_BLOCK, &stops, nullptr);
  SetDisposition(SIGCHLD, SIG_DFL);
  // Its report goes to a starter that may be dead (a server killed while
  // starting jobs): the write fails then, and must not kill the wrapper
  // (the job resets SIGPIPE for itself).
  SetDisposition(SIGPIPE, SIG_IGN);
  ::dup2(a.null_fd, 0);
  ::dup2(a.log_fd, 1);
  ::dup2(a.log_fd, 2);
  pid_t self = ::getpid();
  pid_t job = ::fork();
  if (job == 0) RunJob(a, self);
  if (job > 0) ::setpgid(job, job);  // also done by the job: whichever runs first
  for (int s : {SIGTERM, SIGINT, SIGHUP}) SetDisposition(s, SIG_IGN);
  ::sigprocmask(SIG_UNBLOCK, &stops, nullptr);
  ::close(a.gate_read);
  if (job > 0 && a.run_fd >= 0) {
    char line[40];
    FormatInt(static_cast<int>(::getpid()), line);
    size_t n = 0;
    while (line[n] != '\0') ++n;
    line[n++] = ' ';
    FormatInt(static_cast<int>(job), line + n);
    while (line[n] != '\0') ++n;
    line[n++] = '\n';
    (void)!::pwrite(a.run_fd, line, n, 0);
  }
  // Only now may the job run: a wrapper killed before this line leaves a
  // job that never ran, and a run file that says so.
  if (job > 0) (void)!::write(a.gate_write, "g", 1);
  ::close(a.gate_write);
  int pids[2] = {static_cast<int>(::getpid()), static_cast<int>(job)};
  (void)!::write(a.report_fd, pids, sizeof(pids));
  if (a.run_fd >= 0) {
    // The run file's lock lives as long as the wrapper: keep it as fd 3.
    if (a.run_fd != 3) ::dup2(a.run_fd, 3);
    CloseFrom(4);
  } else {
    CloseFrom(3);
  }
  int code = 127;
  if (job > 0) {
    int status = 0;
    while (::waitpid(job, &status, 0) < 0 && errno == EINTR) {
    }
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  int fd = ::open(a.exit_tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    char number[16];
    FormatInt(code, number);
    WriteText(fd, "exit ");
    WriteText(fd, number);
    WriteText(fd, "\n");
    ::fsync(fd);
    ::close(fd);
    ::rename(a.exit_tmp, a.exit_path);
  }
  ::_exit(0);
}

}  // namespace

Result<JobProcess> StartJob(const JobLaunch& launch) {
  if (launch.command.empty()) return Status::InvalidArgument("the job has no command");
  // sh's exec searches the job's own PATH and reports a missing command in the log.
  std::vector<std::string> args = {"/bin/sh", "-c", "exec \"$0\" \"$@\""};
  args.insert(args.end(), launch.command.begin(), launch.command.end());
  std::vector<std::string> env = launch.env;
  std::string exit_tmp = launch.exit_path + ".tmp";
  ::unlink(launch.exit_path.c_str());  // a requeued job's previous run
  Fd log(::open(launch.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!log.valid()) {
    return Status::IoError("cannot open the job's log " + launch.log_path + ": " +
                           ErrnoText(errno));
  }
  Fd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null.valid()) return Status::IoError("cannot open /dev/null: " + ErrnoText(errno));
  Fd run;
  if (!launch.run_path.empty()) {
    run = Fd(::open(launch.run_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!run.valid()) {
      return Status::IoError("cannot open the job's run file " + launch.run_path + ": " +
                             ErrnoText(errno));
    }
    if (::flock(run.get(), LOCK_EX | LOCK_NB) != 0) {
      return Status::IoError("the job's run file " + launch.run_path +
                             " is locked: a wrapper of this job still runs");
    }
    if (::ftruncate(run.get(), 0) != 0) {
      return Status::IoError("cannot truncate " + launch.run_path + ": " + ErrnoText(errno));
    }
  }
  auto report = MakePipe();
  if (!report.ok()) return report.status();
  auto gate = MakePipe();
  if (!gate.ok()) return gate.status();
  ChildArgs a{NullTerminated(args),
              NullTerminated(env),
              launch.cwd.c_str(),
              launch.exit_path.c_str(),
              exit_tmp.c_str(),
              null.get(),
              log.get(),
              report->write.get(),
              run.valid() ? run.get() : -1,
              gate->read.get(),
              gate->write.get(),
              launch.tied_to_starter};
  pid_t starter = ::getpid();
  pid_t first = ::fork();
  if (first < 0) return Status::IoError("fork: " + ErrnoText(errno));
  if (first == 0) {
    if (a.tied) RunWrapper(a, starter);
    CloseAllButOurs(a);
    // Detached: the wrapper's parent exits at once, so init adopts it.
    pid_t wrapper = ::fork();
    if (wrapper == 0) RunWrapper(a, ::getpid());
    ::_exit(wrapper < 0 ? 1 : 0);
  }
  report->write.Close();
  gate->write.Close();  // the job sees EOF once the wrapper's copy is gone too
  int status = 0;
  while (!a.tied && ::waitpid(first, &status, 0) < 0 && errno == EINTR) {
  }
  int pids[2] = {0, 0};
  size_t got = 0;
  while (got < sizeof(pids)) {
    ssize_t n = ::read(report->read.get(), reinterpret_cast<char*>(pids) + got, sizeof(pids) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got < sizeof(pids)) return Status::IoError("the job's wrapper process did not start");
  if (pids[1] <= 0) return Status::IoError("the job's wrapper could not fork the job");
  JobProcess process;
  process.wrapper_pid = pids[0];
  process.wrapper_start = ProcessStartTime(pids[0]);
  process.job_pgid = pids[1];
  return process;
}

std::optional<int> ReadExitFile(const std::string& exit_path) {
  std::ifstream in(exit_path);
  std::string word;
  int code = -1;
  if (!(in >> word >> code) || word != "exit" || code < 0) return std::nullopt;
  return code;
}

std::string ProcessStartTime(int pid) {
  std::vector<std::string> fields = StatFields(std::to_string(pid));
  return Dead(fields) ? "" : fields[22 - 3];
}

bool WrapperAlive(int pid, const std::string& start) {
  if (pid <= 0 || start.empty()) return false;
  return ProcessStartTime(pid) == start;
}

void SignalJob(int pgid, int signal) {
  if (pgid > 0) ::kill(-pgid, signal);
}

RunFile ReadRunFile(const std::string& path) {
  RunFile out;
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return out;
  out.exists = true;
  if (::flock(fd.get(), LOCK_SH | LOCK_NB) != 0) {
    out.locked = errno == EWOULDBLOCK;
  } else {
    ::flock(fd.get(), LOCK_UN);
  }
  char text[64] = {};
  ssize_t n = ::pread(fd.get(), text, sizeof(text) - 1, 0);
  int wrapper = 0, pgid = 0;
  // A line still being written reads as "not forked yet".
  if (n > 0 && std::sscanf(text, "%d %d\n", &wrapper, &pgid) == 2 && wrapper > 0 && pgid > 0 &&
      text[n - 1] == '\n') {
    out.wrapper_pid = wrapper;
    out.job_pgid = pgid;
  }
  return out;
}

bool KillOrphanedJob(int pgid, int wrapper_pid) {
  if (pgid <= 0 || wrapper_pid <= 0) return false;
  const std::string group = std::to_string(pgid), session = std::to_string(wrapper_pid);
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::vector<std::string> fields = StatFields(pid);
    // Fields 5 and 6: process group and session.
    if (Dead(fields) || fields[5 - 3] != group || fields[6 - 3] != session) continue;
    ::kill(-pgid, SIGKILL);
    return true;
  }
  return false;
}

}  // namespace cohort::queue
