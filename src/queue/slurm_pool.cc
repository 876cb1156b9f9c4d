// sbatch, squeue, scontrol and scancel, run as child processes with a deadline.
#include "queue/slurm_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <sstream>

#include "launch/process_util.h"
#include "launch/ssh_launcher.h"  // ShellQuote

extern char** environ;

namespace cohort::queue {
namespace {

constexpr double kCommandTimeoutS = 30;

struct CommandOutput {
  int exit_code = 0;
  std::string out;
  std::string err;
  // "sbatch: error: ..." for messages: stderr, else stdout.
  std::string Message() const {
    std::string text = err.empty() ? out : err;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }
};

// Runs `args` (PATH searched) with `env` (empty: this process's), capturing
// its output, and kills it after kCommandTimeoutS.
Result<CommandOutput> RunCommand(const std::vector<std::string>& args,
                                 const std::vector<std::string>& env) {
  auto path = FindExecutable(args[0]);
  if (!path) return Status::IoError(args[0] + " is not installed (not found in PATH)");
  auto out = MakePipe();
  auto err = MakePipe();
  if (!out.ok()) return out.status();
  if (!err.ok()) return err.status();
  std::vector<char*> argv = NullTerminated(args);
  std::vector<char*> envp = env.empty() ? std::vector<char*>() : NullTerminated(env);
  char** child_env = env.empty() ? environ : envp.data();
  pid_t pid = ::fork();
  if (pid < 0) return Status::IoError("fork: " + ErrnoText(errno));
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::dup2(out->write.get(), 1);
    ::dup2(err->write.get(), 2);
    ::execve(path->c_str(), argv.data(), child_env);
    ::_exit(127);
  }
  out->write.Close();
  err->write.Close();
  CommandOutput result;
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(kCommandTimeoutS);
  struct pollfd fds[2] = {{out->read.get(), POLLIN, 0}, {err->read.get(), POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  bool timed_out = false;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    if (::poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      ssize_t n = ::read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Status::Timeout(args[0] + " did not answer within " +
                           std::to_string(static_cast<int>(kCommandTimeoutS)) + " s");
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// The value of "Key=value" in scontrol's one-line output, or "".
std::string Field(const std::string& line, const std::string& key) {
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    if (word.rfind(key + "=", 0) == 0) return word.substr(key.size() + 1);
  }
  return "";
}

}  // namespace

Result<std::unique_ptr<SlurmPool>> SlurmPool::Open(std::string pool, std::string partition) {
  std::vector<std::string> args = {"sinfo", "-h", "-o", "%C"};
  if (!partition.empty()) args.push_back("--partition=" + partition);
  auto sinfo = RunCommand(args, {});
  if (!sinfo.ok()) return sinfo.status().WithContext("SLURM pool '" + pool + "'");
  // "allocated/idle/other/total" CPUs.
  std::string text = sinfo->out;
  size_t slash = text.rfind('/');
  int slots = 0;
  if (sinfo->exit_code == 0 && slash != std::string::npos)
    slots = std::atoi(text.c_str() + slash + 1);
  if (slots <= 0) {
    return Status::IoError("SLURM pool '" + pool + "': sinfo found no CPUs: " +
                           (sinfo->Message().empty() ? text : sinfo->Message()));
  }
  return std::unique_ptr<SlurmPool>(new SlurmPool(std::move(pool), std::move(partition), slots));
}

Result<std::string> SlurmPool::Submit(const JobRecord& job, const std::vector<std::string>& env,
                                      const std::string& log_path) {
  std::string script = "exec";
  for (const std::string& arg : job.command) {
    script += ' ';
    script += ShellQuote(arg);
  }
  std::vector<std::string> args = {"sbatch", "--parsable", "--open-mode=append", "--export=ALL"};
  args.push_back("--ntasks=" + std::to_string(job.slots));
  args.push_back("--job-name=" + JobName(job));
  args.push_back("--output=" + log_path);
  args.push_back("--wrap=" + script);
  if (!job.cwd.empty()) args.push_back("--chdir=" + job.cwd);
  if (!partition_.empty()) args.push_back("--partition=" + partition_);
  // sbatch reads SLURM_CONF from its own environment: keep the server's.
  std::vector<std::string> sbatch_env = env;
  if (const char* conf = std::getenv("SLURM_CONF")) {
    std::string entry = "SLURM_CONF=";
    entry += conf;
    sbatch_env.push_back(std::move(entry));
  }
  auto run = RunCommand(args, sbatch_env);
  if (!run.ok()) return run.status();
  std::string id = run->out.substr(0, run->out.find_first_of(";\n"));
  if (run->exit_code != 0 || id.empty() || id.find_first_not_of("0123456789") != id.npos) {
    return Status::IoError("sbatch failed: " + run->Message());
  }
  return id;
}

std::string SlurmPool::JobName(const JobRecord& job) {
  return "cohort-" + std::to_string(job.id) + "-" + std::to_string(job.restarts);
}

Result<std::optional<std::string>> SlurmPool::Find(const JobRecord& job) {
  auto squeue =
      RunCommand({"squeue", "-h", "--states=all", "--name=" + JobName(job), "-o", "%i"}, {});
  if (!squeue.ok()) return squeue.status();
  if (squeue->exit_code != 0) return Status::IoError("squeue failed: " + squeue->Message());
  std::string id = squeue->out.substr(0, squeue->out.find('\n'));
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    return std::optional<std::string>();
  }
  return std::optional<std::string>(id);
}

Result<std::optional<int>> SlurmPool::Poll(const std::string& slurm_id) {
  auto squeue = RunCommand({"squeue", "-h", "-j", slurm_id, "-o", "%T"}, {});
  if (!squeue.ok()) return squeue.status();
  std::string state = squeue->out.substr(0, squeue->out.find('\n'));
  if (squeue->exit_code == 0 && !state.empty() && state != "COMPLETED" && state != "FAILED" &&
      state != "CANCELLED" && state != "TIMEOUT" && state != "NODE_FAIL" &&
      state != "OUT_OF_MEMORY" && state != "PREEMPTED" && state != "BOOT_FAIL" &&
      state != "DEADLINE") {
    return std::optional<int>();  // PENDING, RUNNING, COMPLETING, ...
  }
  auto show = RunCommand({"scontrol", "-o", "show", "job", slurm_id}, {});
  if (!show.ok()) return show.status();
  std::string job_state = Field(show->out, "JobState");
  std::string exit_code = Field(show->out, "ExitCode");  // "code:signal"
  if (show->exit_code != 0 || exit_code.empty()) {
    // SLURM forgot the job (MinJobAge passed): its end is unknown.
    return std::optional<int>(128 + SIGKILL);
  }
  if (job_state == "PENDING" || job_state == "RUNNING" || job_state == "COMPLETING" ||
      job_state == "CONFIGURING" || job_state == "SUSPENDED") {
    return std::optional<int>();
  }
  int code = std::atoi(exit_code.c_str());
  size_t colon = exit_code.find(':');
  int signal = colon == std::string::npos ? 0 : std::atoi(exit_code.c_str() + colon + 1);
  return std::optional<int>(signal > 0 ? 128 + signal : code);
}

Status SlurmPool::Signal(const std::string& slurm_id, bool kill) {
  std::vector<std::string> args = {"scancel"};
  if (!kill) args.insert(args.end(), {"--full", "--signal=TERM"});
  args.push_back(slurm_id);
  auto run = RunCommand(args, {});
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) return Status::IoError("scancel failed: " + run->Message());
  return Status::OK();
}

}  // namespace cohort::queue
