// Tests of `cohort run` on one host. They run the real `cohort` binary
// (COHORT_CLI_PATH) with sh workers and check its exit status, its relayed
// output and how it stops jobs. Every wait has a deadline; a hung launcher is
// killed and the test fails.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/env_config.h"
#include "rendezvous/launcher_env.h"
#include "rendezvous/store_client.h"
#include "support/child_process.h"

namespace cohort {
namespace {

using testing::ChildProcess;
using testing::Contains;
using testing::Finished;
using testing::Lines;

// A running `cohort ARGS...` whose stdout and stderr the test reads.
Finished RunCohort(const std::vector<std::string>& args, double seconds = 30) {
  return testing::RunCohort(args, seconds);
}

// Waits until ranks 0, 1 and 2 have printed "ready N".
bool WaitForThreeReady(ChildProcess& launcher) {
  return launcher.WaitFor(
      [&] {
        return Contains(launcher.out(), "ready 0") && Contains(launcher.out(), "ready 1") &&
               Contains(launcher.out(), "ready 2");
      },
      Deadline::AfterSeconds(20));
}

std::vector<std::string> CohortArgv(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {COHORT_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// ---- flags ----

TEST(LocalLauncher, HelpPrintsUsage) {
  Finished run = RunCohort({"run", "--help"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_TRUE(Contains(run.out, "usage: cohort run -np N")) << run.out;
  EXPECT_TRUE(Contains(run.out, "--timeout-secs")) << run.out;
  EXPECT_TRUE(Contains(run.out, "on this host, or with\n-H/--hostfile across hosts over ssh"))
      << run.out;
  EXPECT_TRUE(Contains(run.out, "srun (SLURM), mpirun (Open MPI) or torchrun")) << run.out;
}

TEST(LocalLauncher, BadFlagsExitTwoWithUsage) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "-np", "0", "true"}, "-np '0' is not a positive integer"},
      {{"run", "-np", "abc", "true"}, "-np 'abc' is not a positive integer"},
      {{"run", "-np", "-3", "true"}, "-np '-3' is not a positive integer"},
      {{"run", "-np", "2"}, "no COMMAND given"},
      {{"run", "-np", "2", "--"}, "no COMMAND given"},
      {{"run", "true"}, "-np N is required"},
      {{"run", "-np"}, "-np needs a value"},
      {{"run", "-np", "2", "--bogus", "true"}, "unknown option '--bogus'"},
      {{"run", "-np", "2", "--transport", "ib", "true"},
       "--transport 'ib' is not auto, shm or tcp"},
      {{"run", "-np", "2", "--timeout", "soon", "true"}, "--timeout 'soon'"},
      {{"run", "-np", "2", "--tcp-streams", "99", "true"},
       "--tcp-streams must be between 1 and 16, not 99"},
      {{"run", "-np", "2", "--fusion-threshold=1X", "true"},
       "--fusion-threshold: '1X' has an unknown unit"},
      {{"run", "-np", "2", "--timeout-secs=-1", "true"}, "--timeout-secs '-1'"},
      {{"run", "-np", "2", "--grace", "-1", "true"}, "--grace must not be negative, not -1"},
  };
  for (const auto& [args, message] : cases) {
    SCOPED_TRACE(args.size() > 2 ? args[1] + " " + args[2] : args.back());
    Finished run = RunCohort(args);
    EXPECT_EQ(run.exit_code, 2);
    EXPECT_TRUE(Contains(run.err, message)) << run.err;
    // The problem and one hint line, not the whole help.
    const size_t first_end = run.err.find('\n');
    ASSERT_NE(first_end, std::string::npos) << run.err;
    EXPECT_EQ(run.err.rfind("cohort run: ", 0), 0u) << run.err;
    EXPECT_EQ(run.err.substr(first_end + 1),
              "usage: cohort run -np N [options] [--] COMMAND [ARGS...]  (cohort run --help "
              "lists the options)\n");
  }
}

// -np is checked against the documented maximum and this host's limits
// before anything starts.
TEST(LocalLauncher, NpBeyondWhatTheHostHoldsIsAUsageError) {
  Finished huge = RunCohort({"run", "-np", "100000", "true"});
  EXPECT_EQ(huge.exit_code, 2);
  EXPECT_TRUE(Contains(huge.err,
                       "cohort run: -np 100000 is above the maximum of 16384 ranks per "
                       "job\n"))
      << huge.err;
  const std::vector<std::string> limited = {
      "/usr/bin/prlimit", "--nproc=40", COHORT_CLI_PATH, "run", "-np", "50", "true"};
  ChildProcess launcher(limited);
  Finished run = launcher.Finish(Deadline::AfterSeconds(30));
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_TRUE(Contains(run.err,
                       "-np 50 needs 50 processes on this host (every rank is one) but "
                       "this user may run at most 40 (RLIMIT_NPROC; see `ulimit -u`)"))
      << run.err;
}

// SIGTERM while 2000 workers are being started stops the start-up at once:
// the launcher forwards it to those already running and exits.
TEST(LocalLauncher, SigtermInterruptsTheStartUp) {
  char dir[] = "/tmp/cohort-startup-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  ChildProcess launcher(CohortArgv(
      {"run", "-np", "2000", "--", "sh", "-c", "touch \"$0/$COHORT_RANK\"; exec sleep 60", dir}));
  const std::string first = std::string(dir) + "/0";
  // The launcher prints nothing while it starts workers: look every 20 ms.
  auto started = [&] { return ::access(first.c_str(), F_OK) == 0; };
  const Deadline deadline = Deadline::AfterSeconds(20);
  while (!launcher.WaitFor(started, Deadline::AfterSeconds(0.02)) && !deadline.Expired()) {
  }
  ASSERT_TRUE(started());
  ASSERT_EQ(::kill(launcher.pid(), SIGTERM), 0);
  Finished run = launcher.Finish(Deadline::AfterSeconds(30));
  EXPECT_EQ(run.exit_code, 128 + SIGTERM) << run.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.err, m,
                                std::regex("received SIGTERM; forwarding it to (\\d+) running")))
      << run.err;
  EXPECT_LT(std::stoi(m[1]), 2000) << run.err;
  ASSERT_EQ(std::system(("rm -rf " + std::string(dir)).c_str()), 0);
}

TEST(LocalLauncher, CommandNotFound) {
  Finished run = RunCohort({"run", "-np", "2", "--", "cohort-no-such-command"});
  EXPECT_EQ(run.exit_code, 127);
  EXPECT_TRUE(Contains(run.err, "command not found: 'cohort-no-such-command'")) << run.err;
}

TEST(LocalLauncher, CommandNotExecutable) {
  Finished run = RunCohort({"run", "-np", "2", "/etc/passwd"});
  EXPECT_EQ(run.exit_code, 126);
  EXPECT_TRUE(Contains(run.err, "cannot execute '/etc/passwd'")) << run.err;
}

// ---- success and output ----

TEST(LocalLauncher, AllSucceedExitsZero) {
  Finished run = RunCohort({"run", "-np", "3", "sh", "-c", "echo hello from $COHORT_RANK"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  std::set<std::string> lines;
  for (const std::string& line : Lines(run.out)) lines.insert(line);
  EXPECT_EQ(lines,
            (std::set<std::string>{"[0] hello from 0", "[1] hello from 1", "[2] hello from 2"}));
  EXPECT_EQ(run.err, "");
}

TEST(LocalLauncher, PrefixesEachLineWithItsRank) {
  // stdout and stderr stay apart; a last line without a newline is still relayed.
  const char* script =
      "for i in 1 2 3; do echo out $COHORT_RANK $i; echo err $COHORT_RANK $i >&2; done;"
      "printf 'tail %s' $COHORT_RANK";
  Finished run = RunCohort({"run", "-np", "4", "--", "sh", "-c", script});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  std::map<int, int> out_lines, err_lines;
  const std::regex pattern(R"(\[(\d)\] (out|err|tail) (\d)( \d)?)");
  for (const auto& [text, counts] : {std::pair{&run.out, &out_lines}, {&run.err, &err_lines}}) {
    for (const std::string& line : Lines(*text)) {
      std::smatch match;
      ASSERT_TRUE(std::regex_match(line, match, pattern)) << "unexpected line: " << line;
      EXPECT_EQ(match[1], match[3]) << "line relayed under the wrong rank: " << line;
      EXPECT_EQ(match[2] == "err", text == &run.err) << line;
      ++(*counts)[std::stoi(match[1])];
    }
  }
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(out_lines[rank], 4) << "rank " << rank;  // three lines and the tail
    EXPECT_EQ(err_lines[rank], 3) << "rank " << rank;
    const std::string r = std::to_string(rank);
    EXPECT_TRUE(Contains(run.out, "[" + r + "] tail " + r + "\n")) << run.out;
  }
}

TEST(LocalLauncher, VeryLongLinesAreRelayedWhole) {
  // 200000 characters without a newline, then a newline: relayed in pieces,
  // each prefixed, with nothing lost.
  Finished run = RunCohort(
      {"run", "-np", "2", "sh", "-c", "head -c 200000 /dev/zero | tr '\\0' x; echo; echo done"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  size_t xs = 0;
  for (const std::string& line : Lines(run.out)) {
    ASSERT_TRUE(line.rfind("[0] ", 0) == 0 || line.rfind("[1] ", 0) == 0) << line.substr(0, 40);
    xs += std::count(line.begin() + 4, line.end(), 'x');
  }
  EXPECT_EQ(xs, 400000u);
  EXPECT_TRUE(Contains(run.out, "[0] done\n"));
  EXPECT_TRUE(Contains(run.out, "[1] done\n"));
}

TEST(LocalLauncher, WorkersSeeTheirEnvironment) {
  const char* script =
      "echo R=$COHORT_RANK S=$COHORT_SIZE LR=$COHORT_LOCAL_RANK LS=$COHORT_LOCAL_SIZE"
      " CR=$COHORT_CROSS_RANK CS=$COHORT_CROSS_SIZE T=$COHORT_TIMEOUT X=$COHORT_TRANSPORT"
      " A=$COHORT_STORE_ADDR K=$COHORT_SECRET H=$HOME";
  Finished run = RunCohort(
      {"run", "-np", "3", "--timeout", "45", "--transport", "tcp", "--", "sh", "-c", script});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const std::regex pattern(
      R"(\[(\d)\] R=(\d) S=3 LR=(\d) LS=3 CR=0 CS=1 T=45 X=tcp A=(127\.0\.0\.1:\d+) K=([0-9a-f]+) H=(.*))");
  std::set<std::string> addresses, secrets;
  std::set<int> ranks;
  for (const std::string& line : Lines(run.out)) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, pattern)) << line;
    EXPECT_EQ(match[1], match[2]);
    EXPECT_EQ(match[2], match[3]);
    ranks.insert(std::stoi(match[2]));
    addresses.insert(match[4]);
    secrets.insert(match[5]);
    const char* home = std::getenv("HOME");
    EXPECT_EQ(match[6], home != nullptr ? home : "") << "the launcher's environment is passed on";
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(addresses.size(), 1u) << "every rank gets the same store";
  ASSERT_EQ(secrets.size(), 1u) << "every rank gets the same secret";
  EXPECT_EQ(secrets.begin()->size(), 64u);
}

// Not a test of its own: the worker side of StoreIsReachableFromWorkers,
// which runs this binary under `cohort run`. Skipped anywhere else.
TEST(LocalLauncher, WorkerSideOfStoreTest) {
  if (std::getenv("COHORT_LAUNCHER_TEST_WORKER") == nullptr) {
    GTEST_SKIP() << "runs only as a worker of StoreIsReachableFromWorkers";
  }
  Result<JobEnvironment> job = ParseJobEnvironment(ProcessEnv());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->launcher, "cohort");
  EXPECT_FALSE(job->rank0_hosts_store);
  const Deadline deadline = Deadline::AfterSeconds(20);
  Result<std::unique_ptr<StoreClient>> store =
      StoreClient::Connect(job->store_host, job->store_port, job->secret, deadline);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->Set("rank" + std::to_string(job->rank), "here").ok());
  for (int peer = 0; peer < job->size; ++peer) {
    Result<std::string> value = (*store)->Get("rank" + std::to_string(peer), deadline);
    ASSERT_TRUE(value.ok()) << value.status().ToString();
    EXPECT_EQ(*value, "here");
  }
  ASSERT_TRUE((*store)->Barrier("done", job->size, deadline).ok());
  std::printf("worker %d reached the store\n", job->rank);
}

TEST(LocalLauncher, StoreIsReachableFromWorkers) {
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  ASSERT_GT(n, 0);
  self[n] = '\0';
  Finished run = RunCohort({"run", "-np", "3", "--", "env", "COHORT_LAUNCHER_TEST_WORKER=1", self,
                            "--gtest_filter=LocalLauncher.WorkerSideOfStoreTest"},
                           60);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  for (int rank = 0; rank < 3; ++rank) {
    const std::string r = std::to_string(rank);
    EXPECT_TRUE(Contains(run.out, "[" + r + "] worker " + r + " reached the store")) << run.out;
  }
}

// ---- failures and stopping ----

TEST(LocalLauncher, FailingWorkerStopsTheOthers) {
  Finished run = RunCohort(
      {"run", "-np", "3", "--", "sh", "-c", "if [ $COHORT_RANK = 1 ]; then exit 3; fi; sleep 30"});
  EXPECT_EQ(run.exit_code, 3) << run.err;
  EXPECT_LT(run.seconds, 15) << "the other workers were not stopped";
  EXPECT_TRUE(std::regex_search(
      run.err, std::regex(R"(cohort run: rank 1 \(pid \d+\) exited with status 3 first; )"
                          R"(stopping the other 2 workers\n)")))
      << run.err;
}

TEST(LocalLauncher, SingleFailingWorker) {
  Finished run = RunCohort({"run", "-np", "1", "sh", "-c", "echo bye; exit 9"});
  EXPECT_EQ(run.exit_code, 9);
  EXPECT_EQ(run.out, "[0] bye\n");
  EXPECT_TRUE(std::regex_search(
      run.err, std::regex(R"(^cohort run: rank 0 \(pid \d+\) exited with status 9\n$)")))
      << run.err;
}

TEST(LocalLauncher, LastWorkerFailingAfterOthersSucceeded) {
  Finished run = RunCohort(
      {"run", "-np", "3", "sh", "-c", "if [ $COHORT_RANK = 2 ]; then exit 7; fi; exit 0"});
  EXPECT_EQ(run.exit_code, 7);
  EXPECT_TRUE(Contains(run.err, "rank 2")) << run.err;
}

TEST(LocalLauncher, KilledWorkerAndSigkillEscalation) {
  // Workers ignore SIGTERM, so after rank 0 is killed the others need SIGKILL
  // once the 2 s grace period is over.
  ChildProcess launcher(
      CohortArgv({"run", "-np", "3", "--", "sh", "-c",
                  "trap '' TERM; echo ready $COHORT_RANK $$; while :; do sleep 1; done"}));
  ASSERT_TRUE(WaitForThreeReady(launcher)) << launcher.out();
  std::smatch match;
  ASSERT_TRUE(std::regex_search(launcher.out(), match, std::regex(R"(\[0\] ready 0 (\d+))")));
  ASSERT_EQ(::kill(std::stoi(match[1]), SIGKILL), 0);
  Finished run = launcher.Finish(Deadline::AfterSeconds(20));
  EXPECT_EQ(run.exit_code, 128 + SIGKILL);
  EXPECT_TRUE(Contains(run.err,
                       ") was killed by signal 9 (Killed) first; stopping the other 2 "
                       "workers"))
      << run.err;
  EXPECT_TRUE(Contains(run.err, "ranks 1, 2 still running 2 s after SIGTERM; sending SIGKILL"))
      << run.err;
  EXPECT_GE(run.seconds, 1.9);
}

// Starts 3 workers that count the signals they get, waits until all run,
// signals the launcher (or its whole group, as a terminal does on Ctrl-C) and
// checks that each worker got the signal exactly once and that the launcher
// exits 128+signal. A duplicate would arrive within milliseconds, well inside
// the half second each worker waits after the first. (A shell runs a trap
// only once its foreground command ends, hence the short sleeps: each worker
// must be done well within the launcher's 2 s grace period.)
void CheckForwarding(int sig, const std::string& trap_name, bool to_group) {
  const std::string script =
      "n=0; trap 'n=$((n+1))' " + trap_name +
      "; echo ready $COHORT_RANK; while [ $n = 0 ]; do sleep 0.1; done; sleep 0.5;"
      "echo got $n $COHORT_RANK";
  ChildProcess launcher(CohortArgv({"run", "-np", "3", "--", "sh", "-c", script}), {}, to_group);
  ASSERT_TRUE(WaitForThreeReady(launcher)) << launcher.out();
  ASSERT_EQ(::kill(to_group ? -launcher.pid() : launcher.pid(), sig), 0);
  Finished run = launcher.Finish(Deadline::AfterSeconds(20));
  EXPECT_EQ(run.exit_code, 128 + sig) << run.err;
  EXPECT_LT(run.seconds, 15);
  for (int rank = 0; rank < 3; ++rank) {
    const std::string r = std::to_string(rank);
    EXPECT_TRUE(Contains(run.out, "[" + r + "] got 1 " + r + "\n")) << run.out;
  }
  EXPECT_TRUE(
      Contains(run.err, "received SIG" + trap_name + "; forwarding it to 3 running workers"))
      << run.err;
  EXPECT_FALSE(Contains(run.err, "SIGKILL")) << run.err;
}

TEST(LocalLauncher, SigtermReachesEveryWorker) { CheckForwarding(SIGTERM, "TERM", false); }

// Preemption: workers that need 3 s to write a checkpoint after SIGTERM get
// the grace (--grace, or COHORT_GRACE as the queue sets it), not the 2 s
// default, before SIGKILL.
void CheckGraceLetsWorkersSave(const std::vector<std::string>& flags,
                               const std::map<std::string, std::string>& env) {
  std::vector<std::string> args = {"run", "-np", "2"};
  args.insert(args.end(), flags.begin(), flags.end());
  for (std::string word :
       {"--", "sh", "-c",
        "trap 'sleep 3; echo saved $COHORT_RANK; exit 0' TERM; echo ready $COHORT_RANK;"
        "while :; do sleep 0.1; done"}) {
    args.push_back(word);
  }
  ChildProcess launcher(CohortArgv(args), env);
  ASSERT_TRUE(launcher.WaitFor(
      [&] { return Contains(launcher.out(), "ready 0") && Contains(launcher.out(), "ready 1"); },
      Deadline::AfterSeconds(20)))
      << launcher.out();
  ASSERT_EQ(::kill(launcher.pid(), SIGTERM), 0);
  Finished run = launcher.Finish(Deadline::AfterSeconds(20));
  EXPECT_EQ(run.exit_code, 128 + SIGTERM) << run.err;
  EXPECT_TRUE(Contains(run.out, "[0] saved 0\n")) << run.out << run.err;
  EXPECT_TRUE(Contains(run.out, "[1] saved 1\n")) << run.out << run.err;
  EXPECT_FALSE(Contains(run.err, "SIGKILL")) << run.err;
  EXPECT_GE(run.seconds, 2.9);
}

TEST(LocalLauncher, GraceFlagLetsWorkersSaveAfterSigterm) {
  CheckGraceLetsWorkersSave({"--grace", "8"}, {});
}

TEST(LocalLauncher, GraceVariableLetsWorkersSaveAfterSigterm) {
  CheckGraceLetsWorkersSave({}, {{"COHORT_GRACE", "8"}});
}

TEST(LocalLauncher, SigintToTheTerminalGroupIsForwardedOnce) {
  CheckForwarding(SIGINT, "INT", true);
}

// The healthy rank that reacted first is not blamed: the rank whose failure
// record (abort/<rank>) came first is named, with its reason.
TEST(LocalLauncher, ReportsTheRankThatFailedFirst) {
  Finished run = RunCohort({"run", "-np", "3", testing::TestBinary("root_cause_worker")});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(std::regex_search(
      run.err, std::regex("cohort run: rank 0 \\(pid \\d+\\) exited with status 1 first, reacting "
                          "to rank 1 \\(pid \\d+\\), which failed before it: allreduce 'grad': "
                          "disk on fire second line; stopping the other 2 workers\n")))
      << run.err;
}

// A stopped rank cannot answer, so its peers give up: it is named as the
// likely cause, and the launcher still stops it promptly.
TEST(LocalLauncher, NamesAStoppedRank) {
  Finished run =
      RunCohort({"run", "-np", "2", "--", "sh", "-c",
                 "if [ $COHORT_RANK = 1 ]; then kill -STOP $$; sleep 30; fi; sleep 0.5; exit 1"});
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(std::regex_search(
      run.err, std::regex("cohort run: rank 0 \\(pid \\d+\\) exited with status 1 first, but "
                          "rank 1 \\(pid \\d+\\) is stopped \\(SIGSTOP or a debugger\\) and is "
                          "the likely cause; stopping the other 1 worker\n")))
      << run.err;
  EXPECT_FALSE(Contains(run.err, "SIGKILL")) << run.err;  // SIGCONT let SIGTERM act
  EXPECT_LT(run.seconds, 10);
}

TEST(LocalLauncher, JobTimeout) {
  Finished run = RunCohort({"run", "-np", "2", "--timeout-secs", "0.5", "sleep", "30"});
  EXPECT_EQ(run.exit_code, 124);
  EXPECT_LT(run.seconds, 15);
  EXPECT_TRUE(Contains(run.err,
                       "did not finish within 0.5 s (--timeout-secs); stopping 2 running "
                       "workers"))
      << run.err;
}

}  // namespace
}  // namespace cohort
