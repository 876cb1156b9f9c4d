// ChildProcess implementation: fork/exec with pipes, polled with a pidfd.
#include "support/child_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>

namespace cohort::testing {

ChildProcess::ChildProcess(const std::vector<std::string>& args,
                           const std::map<std::string, std::string>& env, bool own_group,
                           bool stdin_pipe) {
  int out[2], err[2], in[2] = {-1, -1};
  EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
  EXPECT_EQ(::pipe2(err, O_CLOEXEC), 0);
  if (stdin_pipe) {
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
  }
  std::vector<std::string> full = args;
  std::vector<char*> argv;
  for (std::string& arg : full) argv.push_back(arg.data());
  argv.push_back(nullptr);
  start_ = Clock::now();
  pid_ = ::fork();
  if (pid_ == 0) {
    if (own_group) ::setpgid(0, 0);
    for (const auto& [key, value] : env) ::setenv(key.c_str(), value.c_str(), 1);
    if (stdin_pipe) ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  EXPECT_GT(pid_, 0);
  if (own_group) ::setpgid(pid_, pid_);
  ::close(out[1]);
  ::close(err[1]);
  if (stdin_pipe) {
    ::close(in[0]);
    in_fd_ = in[1];
  }
  out_fd_ = out[0];
  err_fd_ = err[0];
  pid_fd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  EXPECT_GE(pid_fd_, 0) << "pidfd_open: " << std::strerror(errno);
}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  for (int fd : {out_fd_, err_fd_, pid_fd_, in_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

bool ChildProcess::WriteStdin(const std::string& data) {
  size_t done = 0;
  while (in_fd_ >= 0 && done < data.size()) {
    const ssize_t n = ::write(in_fd_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return in_fd_ >= 0;
}

void ChildProcess::CloseStdin() {
  if (in_fd_ >= 0) ::close(in_fd_);
  in_fd_ = -1;
}

bool ChildProcess::WaitFor(const std::function<bool()>& done, Deadline deadline) {
  while (!done()) {
    if (deadline.Expired() || !PumpOnce(deadline)) return done();
  }
  return true;
}

bool ChildProcess::WaitForOutput(const std::string& text, Deadline deadline) {
  return WaitFor([&] { return out_.find(text) != std::string::npos; }, deadline);
}

Finished ChildProcess::Finish(Deadline deadline) {
  while ((out_fd_ >= 0 || err_fd_ >= 0 || !exited_) && !deadline.Expired()) {
    PumpOnce(deadline);
  }
  Finished result;
  if (!exited_) {
    ADD_FAILURE() << "child did not exit before the deadline; killing it";
    ::kill(pid_, SIGKILL);
  }
  int status = 0;
  ::waitpid(pid_, &status, 0);
  reaped_ = true;
  if (exited_) {
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  result.out = out_;
  result.err = err_;
  result.seconds = SecondsSince(start_);
  return result;
}

bool ChildProcess::PumpOnce(Deadline deadline) {
  std::vector<pollfd> fds;
  std::vector<std::pair<int*, std::string*>> targets;
  for (auto [fd, text] : {std::pair{&out_fd_, &out_}, std::pair{&err_fd_, &err_}}) {
    if (*fd < 0) continue;
    fds.push_back({*fd, POLLIN, 0});
    targets.push_back({fd, text});
  }
  if (!exited_) fds.push_back({pid_fd_, POLLIN, 0});
  if (fds.empty()) return false;
  if (::poll(fds.data(), fds.size(), deadline.RemainingMs()) <= 0) return true;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (fds[i].revents == 0) continue;
    char buf[65536];
    ssize_t n = ::read(*targets[i].first, buf, sizeof(buf));
    if (n > 0) {
      targets[i].second->append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      ::close(*targets[i].first);
      *targets[i].first = -1;
    }
  }
  if (!exited_ && fds.back().revents != 0) exited_ = true;
  return true;
}

Finished RunCohort(const std::vector<std::string>& args, double seconds,
                   const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {COHORT_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess child(argv, env);
  return child.Finish(Deadline::AfterSeconds(seconds));
}

std::vector<Finished> RunTogether(const std::vector<std::vector<std::string>>& argvs,
                                  const std::vector<std::map<std::string, std::string>>& envs,
                                  double seconds) {
  const Deadline deadline = Deadline::AfterSeconds(seconds);
  std::vector<std::unique_ptr<ChildProcess>> children;
  for (size_t i = 0; i < argvs.size(); ++i) {
    children.push_back(std::make_unique<ChildProcess>(argvs[i], envs.at(i)));
  }
  std::vector<Finished> results;
  for (auto& child : children) results.push_back(child->Finish(deadline));
  return results;
}

namespace {

// Whether a TCP listener could bind 127.0.0.1:port now.
bool Bindable(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

int FreePort() {
  // Below Linux's ephemeral range (32768-60999 by default): a port the
  // kernel handed out for bind(0) can be handed to any other process's
  // outgoing connection before the test's child binds it (seen once under
  // ctest -j2: "Address already in use"). Ports here are only ever taken
  // by listeners, which other tests pick at random too.
  static std::mt19937 gen(std::random_device{}());
  std::uniform_int_distribution<int> pick(20000, 32000);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = pick(gen);
    if (Bindable(port)) return port;
  }
  ADD_FAILURE() << "no bindable port in 20000-32000 after 200 tries";
  return 0;
}

std::vector<std::unique_ptr<ChildProcess>> StartWithTorchrunVariables(
    int np, const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  const int store_port = FreePort();  // torchrun's rule: cohort's store at MASTER_PORT + 1
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (int r = 0; r < np; ++r) {
    std::map<std::string, std::string> vars = {{"RANK", std::to_string(r)},
                                               {"WORLD_SIZE", std::to_string(np)},
                                               {"LOCAL_RANK", std::to_string(r)},
                                               {"MASTER_ADDR", "127.0.0.1"},
                                               {"MASTER_PORT", std::to_string(store_port - 1)},
                                               {"COHORT_SECRET", "test-secret"},
                                               {"COHORT_TIMEOUT", "60"}};
    for (const auto& [k, v] : env) vars[k] = v;
    workers.push_back(std::make_unique<ChildProcess>(argv, vars));
  }
  return workers;
}

std::string TestBinary(const std::string& name) {
  return std::string(COHORT_TEST_BIN_DIR) + "/" + name;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

}  // namespace cohort::testing
