// QueueStore: job records round-trip through SQLite, survive reopening, and
// share the file with the tracking store. JobProcess: detached jobs, their
// exit files and liveness.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <thread>

#include "data/data_test_util.h"
#include "queue/job_process.h"
#include "queue/queue_store.h"
#include "track/store.h"

namespace cohort::queue {
namespace {

using data::testing::TempDir;

JobRecord Sample() {
  JobRecord job;
  job.user = "alice";
  job.project = "vision";
  job.pool = "gpu";
  job.slots = 4;
  job.priority = sched::PriorityClass::kHigh;
  job.max_time = 90;
  job.command = {"python3", "train.py", "--lr", "it's 0.1"};
  job.cwd = "/work";
  job.env = {"A=1", "B=x=y"};
  job.submitted = 1000.5;
  return job;
}

TEST(QueueStoreTest, RecordsRoundTripAndSurviveReopening) {
  TempDir dir;
  std::string path = dir.Sub("q.db");
  uint64_t id = 0;
  {
    auto store = QueueStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto inserted = (*store)->Insert(Sample());
    ASSERT_TRUE(inserted.ok());
    id = *inserted;
    EXPECT_EQ((*(*store)->Insert(Sample())), id + 1);
    auto job = (*store)->Get(id);
    ASSERT_TRUE(job.ok() && job->has_value());
    JobRecord running = **job;
    running.state = JobState::kRunning;
    running.started = 1001;
    running.host = "a1";
    running.wrapper_pid = 42;
    running.wrapper_start = "12345";
    running.job_pgid = 43;
    running.stop = StopReason::kPreempt;
    running.stop_since = 1002;
    running.slurm_id = "77";
    running.placement = FormatPlacement({{"a1", 3}, {"a2", 1}});
    ASSERT_TRUE((*store)->Update(running).ok());
  }
  auto store = QueueStore::Open(path);
  ASSERT_TRUE(store.ok());
  auto job = (*store)->Get(id);
  ASSERT_TRUE(job.ok() && job->has_value());
  const JobRecord& j = **job;
  EXPECT_EQ(j.user, "alice");
  EXPECT_EQ(j.project, "vision");
  EXPECT_EQ(j.pool, "gpu");
  EXPECT_EQ(j.slots, 4);
  EXPECT_EQ(j.priority, sched::PriorityClass::kHigh);
  EXPECT_EQ(j.max_time, 90);
  EXPECT_EQ(j.command, Sample().command);
  EXPECT_EQ(j.env, Sample().env);
  EXPECT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(j.started, 1001);
  EXPECT_EQ(j.host, "a1");
  EXPECT_EQ(j.wrapper_pid, 42);
  EXPECT_EQ(j.wrapper_start, "12345");
  EXPECT_EQ(j.job_pgid, 43);
  EXPECT_EQ(j.stop, StopReason::kPreempt);
  EXPECT_EQ(j.slurm_id, "77");
  EXPECT_EQ(j.placement, "a1:3,a2:1");
  EXPECT_EQ(ParsePlacement(j.placement),
            (std::vector<std::pair<std::string, int>>{{"a1", 3}, {"a2", 1}}));
  auto missing = (*store)->Get(id + 100);
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  // Active: pending, running, preempted; not final jobs.
  JobRecord done = **(*store)->Get(id + 1);
  done.state = JobState::kSucceeded;
  ASSERT_TRUE((*store)->Update(done).ok());
  auto active = (*store)->Active();
  ASSERT_TRUE(active.ok());
  ASSERT_EQ(active->size(), 1u);
  EXPECT_EQ(active->front().id, id);
  EXPECT_EQ((*store)->List()->size(), 2u);
}

TEST(QueueStoreTest, OneConnectionOwnsTheFile) {
  // Two servers must not run one queue: the second open is refused, naming
  // the file, and the first keeps working.
  TempDir dir;
  std::string path = dir.Sub("queue.db");
  auto queue = QueueStore::Open(path);
  ASSERT_TRUE(queue.ok()) << queue.status().ToString();
  auto second = QueueStore::Open(path);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find(path + " is open in another process"), std::string::npos)
      << second.status().message();
  ASSERT_TRUE((*queue)->Insert(Sample()).ok());
  EXPECT_EQ((*queue)->List()->size(), 1u);
}

TEST(QueueStoreTest, StateNamesParseBack) {
  for (JobState s :
       {JobState::kPending, JobState::kStarting, JobState::kRunning, JobState::kSucceeded,
        JobState::kFailed, JobState::kCancelled, JobState::kPreempted}) {
    EXPECT_EQ(*ParseState(StateName(s)), s);
  }
  EXPECT_EQ(ParseState("done").status().message(),
            "unknown job state 'done' (pending, starting, running, succeeded, failed, "
            "cancelled, preempted)");
}

std::optional<int> WaitForExit(const std::string& exit_path) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto code = ReadExitFile(exit_path)) return code;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

TEST(JobProcessTest, DetachedJobWritesItsExitStatusAndLog) {
  TempDir dir;
  JobLaunch launch;
  launch.command = {"sh", "-c", "echo out; echo err >&2; echo $MARK; exit 7"};
  launch.env = {"MARK=marked", "PATH=/usr/bin:/bin"};
  launch.cwd = dir.path();
  launch.log_path = dir.Sub("1.log");
  launch.exit_path = dir.Sub("1.exit");
  auto process = StartJob(launch);
  ASSERT_TRUE(process.ok()) << process.status().ToString();
  EXPECT_GT(process->job_pgid, 0);
  EXPECT_EQ(WaitForExit(launch.exit_path), 7);
  std::ifstream log(launch.log_path);
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "out\nerr\nmarked\n");
}

TEST(JobProcessTest, SignalledJobAndLiveness) {
  TempDir dir;
  JobLaunch launch;
  launch.command = {"sleep", "30"};
  launch.env = {"PATH=/usr/bin:/bin"};
  launch.log_path = dir.Sub("2.log");
  launch.exit_path = dir.Sub("2.exit");
  auto process = StartJob(launch);
  ASSERT_TRUE(process.ok());
  EXPECT_TRUE(WrapperAlive(process->wrapper_pid, process->wrapper_start));
  EXPECT_FALSE(WrapperAlive(process->wrapper_pid, process->wrapper_start + "1"));
  SignalJob(process->job_pgid, SIGTERM);  // the wrapper ignores it; the job dies
  EXPECT_EQ(WaitForExit(launch.exit_path), 128 + SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (WrapperAlive(process->wrapper_pid, process->wrapper_start) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(WrapperAlive(process->wrapper_pid, process->wrapper_start));
}

bool GroupAlive(int pgid) { return ::kill(-pgid, 0) == 0; }

bool WaitUntil(const std::function<bool()>& condition) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

TEST(JobProcessTest, RunFileTellsARunningJobFromAnOrphanAndNeverStarted) {
  TempDir dir;
  const std::string run_path = dir.Sub("3.run");
  EXPECT_FALSE(ReadRunFile(run_path).exists);  // never started
  JobLaunch launch;
  launch.command = {"sleep", "30"};
  launch.env = {"PATH=/usr/bin:/bin"};
  launch.log_path = dir.Sub("3.log");
  launch.exit_path = dir.Sub("3.exit");
  launch.run_path = run_path;
  auto process = StartJob(launch);
  ASSERT_TRUE(process.ok()) << process.status().ToString();
  // Followable: its wrapper holds the file and it names the processes.
  RunFile run = ReadRunFile(run_path);
  EXPECT_TRUE(run.exists && run.locked);
  EXPECT_EQ(run.wrapper_pid, process->wrapper_pid);
  EXPECT_EQ(run.job_pgid, process->job_pgid);
  // A second start of the same job is refused while the wrapper runs.
  auto twice = StartJob(launch);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().message(),
            "the job's run file " + run_path + " is locked: a wrapper of this job still runs");
  // The wrapper dies without an exit status: the job is an orphan, which
  // the run file still names, and which is killed by its group.
  ASSERT_EQ(::kill(process->wrapper_pid, SIGKILL), 0);
  ASSERT_TRUE(WaitUntil([&] { return !ReadRunFile(run_path).locked; }));
  run = ReadRunFile(run_path);
  EXPECT_EQ(run.wrapper_pid, process->wrapper_pid);
  EXPECT_TRUE(GroupAlive(process->job_pgid));
  EXPECT_FALSE(KillOrphanedJob(process->job_pgid, process->wrapper_pid + 1));  // not its session
  EXPECT_TRUE(GroupAlive(process->job_pgid));
  EXPECT_TRUE(KillOrphanedJob(process->job_pgid, process->wrapper_pid));
  EXPECT_TRUE(WaitUntil([&] { return !GroupAlive(process->job_pgid); }));
  EXPECT_FALSE(KillOrphanedJob(process->job_pgid, process->wrapper_pid));
  EXPECT_FALSE(ReadExitFile(launch.exit_path).has_value());
}

TEST(JobProcessTest, ExitFilesAreReadStrictly) {
  TempDir dir;
  EXPECT_FALSE(ReadExitFile(dir.Sub("absent")).has_value());
  std::ofstream(dir.Sub("garbage")) << "exit\n";
  EXPECT_FALSE(ReadExitFile(dir.Sub("garbage")).has_value());
  std::ofstream(dir.Sub("good")) << "exit 0\n";
  EXPECT_EQ(ReadExitFile(dir.Sub("good")), 0);
  EXPECT_FALSE(ProcessStartTime(::getpid()).empty());
  EXPECT_EQ(ProcessStartTime(0), "");
}

}  // namespace
}  // namespace cohort::queue
