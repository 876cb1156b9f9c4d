// ChildProcess: a program a test starts and watches, with its stdout and
// stderr captured and every wait bounded by a deadline (a hung child is
// killed and reported, never waited on forever).
#ifndef COHORT_TESTS_SUPPORT_CHILD_PROCESS_H_
#define COHORT_TESTS_SUPPORT_CHILD_PROCESS_H_

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/deadline.h"

namespace cohort::testing {

struct Finished {
  int exit_code = -1;  // 128+N when killed by signal N; -1 when it had to be killed
  std::string out;
  std::string err;
  double seconds = 0;
};

class ChildProcess {
 public:
  // Starts argv[0] (a path) with the test's environment plus `env`. With
  // `own_group`, the child leads a new process group, like a job a shell
  // starts, so the test can signal the group as a terminal would. With
  // `stdin_pipe`, the test writes the child's stdin (WriteStdin, CloseStdin);
  // otherwise the child shares the test's.
  explicit ChildProcess(const std::vector<std::string>& argv,
                        const std::map<std::string, std::string>& env = {}, bool own_group = false,
                        bool stdin_pipe = false);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

  // Writes all of `data` to the child's stdin (false when it cannot).
  bool WriteStdin(const std::string& data);
  void CloseStdin();

  // Reads output until `done()` holds; false when the deadline passes first.
  bool WaitFor(const std::function<bool()>& done, Deadline deadline);
  bool WaitForOutput(const std::string& text, Deadline deadline);
  // Reads all output and waits for the exit; kills the child at the deadline
  // (and records a test failure).
  Finished Finish(Deadline deadline);

 private:
  bool PumpOnce(Deadline deadline);

  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1, pid_fd_ = -1, in_fd_ = -1;
  bool exited_ = false, reaped_ = false;
  Clock::time_point start_;
  std::string out_, err_;
};

// Runs `cohort ARGS...` (the built binary) to completion within `seconds`.
Finished RunCohort(const std::vector<std::string>& args, double seconds = 60,
                   const std::map<std::string, std::string>& env = {});

// Starts `np` copies of `argv` as ranks of one job with torchrun's variables
// (rank 0 hosts the store), the test secret and a 60 s COHORT_TIMEOUT, plus
// `env`. Unlike `cohort run`, nothing stops the others when one rank dies,
// so a test can watch each survivor.
std::vector<std::unique_ptr<ChildProcess>> StartWithTorchrunVariables(
    int np, const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);

// Starts one process per argv (argvs[i] with envs[i]) at once, then waits for
// each within `seconds` of the start; results in the same order.
std::vector<Finished> RunTogether(const std::vector<std::vector<std::string>>& argvs,
                                  const std::vector<std::map<std::string, std::string>>& envs,
                                  double seconds);

// A TCP port on 127.0.0.1 that was free a moment ago, picked at random below
// the kernel's ephemeral range (no outgoing connection takes it meanwhile).
int FreePort();

// Path of a test worker program built next to the test binary.
std::string TestBinary(const std::string& name);

bool Contains(const std::string& text, const std::string& part);
std::vector<std::string> Lines(const std::string& text);

}  // namespace cohort::testing

#endif  // COHORT_TESTS_SUPPORT_CHILD_PROCESS_H_
