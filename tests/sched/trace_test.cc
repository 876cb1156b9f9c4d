// Trace CSV parsing (exact errors), the synthetic generator's shape, and a
// hand-made trace whose simulated outcome is known exactly.
#include "sched/trace.h"

#include <gtest/gtest.h>

#include <set>

#include "sched/simulator.h"

namespace cohort::sched {
namespace {

TEST(Trace, ParsesRowsSkippingHeaderCommentsAndBlankLines) {
  Result<std::vector<TraceJob>> jobs = ParseTrace(
      "submit,user,project,slots,duration,priority,max_time\n"
      "# a comment\n"
      "10, alice, vision, 8, 3600, high, 7200\n"
      "\n"
      "5,bob,,1,60,low\n",
      "t.csv");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 2u);
  const TraceJob& bob = (*jobs)[0];  // sorted by submit time
  EXPECT_EQ(bob.user, "bob");
  EXPECT_EQ(bob.project, "bob");  // an empty project is the user's own
  EXPECT_EQ(bob.priority, PriorityClass::kLow);
  EXPECT_EQ(bob.max_time, 0);
  const TraceJob& alice = (*jobs)[1];
  EXPECT_EQ(alice.submit, 10);
  EXPECT_EQ(alice.project, "vision");
  EXPECT_EQ(alice.slots, 8);
  EXPECT_EQ(alice.duration, 3600);
  EXPECT_EQ(alice.priority, PriorityClass::kHigh);
  EXPECT_EQ(alice.max_time, 7200);
}

TEST(Trace, BadRowsNameTheLineAndField) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"1,a,p,2,10\n",
       "t.csv:1: expected 6 or 7 fields "
       "(submit,user,project,slots,duration,priority[,max_time]), got 5"},
      {"1,a,p,2,10,normal\nx,a,p,2,10,normal\n",
       "t.csv:2: submit 'x' is not a non-negative number"},
      {"1,a,p,0,10,normal\n", "t.csv:1: slots '0' is not a positive integer"},
      {"1,a,p,1.5,10,normal\n", "t.csv:1: slots '1.5' is not a positive integer"},
      {"1,a,p,2,-3,normal\n", "t.csv:1: duration '-3' is not a non-negative number"},
      {"1,a,p,2,10,urgent\n", "t.csv:1: unknown priority 'urgent' (expected high, normal or low)"},
      {"1,,p,2,10,low\n", "t.csv:1: user is empty"},
      {"1,a,p,2,10,low,5\n", "t.csv:1: max_time 5 is shorter than duration 10"},
      {"# only a comment\n", "t.csv: the trace has no jobs"},
  };
  for (const Case& c : cases) {
    Result<std::vector<TraceJob>> jobs = ParseTrace(c.text, "t.csv");
    ASSERT_FALSE(jobs.ok()) << c.text;
    EXPECT_EQ(jobs.status().message(), c.message);
  }
  EXPECT_EQ(ReadTraceFile("/nonexistent/trace.csv").status().message(),
            "cannot open trace '/nonexistent/trace.csv'");
}

TEST(Trace, SyntheticTraceIsReproducibleAndShapedLikeGpuClusters) {
  SyntheticSpec spec;
  spec.jobs = 2000;
  spec.users = 8;
  std::vector<TraceJob> a = SyntheticTrace(spec);
  std::vector<TraceJob> b = SyntheticTrace(spec);
  ASSERT_EQ(FormatTrace(a), FormatTrace(b));
  int single = 0, largest = 0;
  std::set<std::string> users;
  for (const TraceJob& job : a) {
    single += job.slots == 1;
    largest = std::max(largest, job.slots);
    EXPECT_GE(job.max_time, job.duration);
    EXPECT_EQ(job.project[0], 'p');
    EXPECT_EQ(job.project.substr(1), std::to_string((job.user[1] - '0') / 2));
    users.insert(job.user);
  }
  EXPECT_GT(single, 1000);  // most jobs ask for one slot
  EXPECT_EQ(largest, 64);
  EXPECT_EQ(users.size(), 8u);
  // The CSV round-trips.
  Result<std::vector<TraceJob>> parsed = ParseTrace(FormatTrace(a), "synthetic");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(FormatTrace(*parsed), FormatTrace(a));
}

// One host of 4 slots: a 4-slot job runs [0, 100); a 4-slot job submitted
// at 1 waits for it; a 1-slot job submitted at 2 for 50 s.
std::vector<TraceJob> SmallTrace() {
  return *ParseTrace(
      "0,a,p,2,100,normal,100\n"
      "1,b,p,4,100,normal,100\n"
      "2,c,p,1,50,normal,50\n",
      "small");
}

TEST(Simulator, BackfillShortensCompletionWithoutDelayingTheHead) {
  SimulationConfig config;
  config.hosts = 1;
  config.slots_per_host = 4;
  config.policy.kind = PolicyKind::kFifo;
  Result<SimulationResult> fifo = Simulate(SmallTrace(), config);
  ASSERT_TRUE(fifo.ok());
  // FIFO: a [0,100), b [100,200), c [200,250): JCTs 100, 199, 248.
  EXPECT_DOUBLE_EQ(fifo->mean_jct, (100 + 199 + 248) / 3.0);
  EXPECT_EQ(fifo->makespan, 250);
  config.policy.kind = PolicyKind::kCohort;
  Result<SimulationResult> cohort = Simulate(SmallTrace(), config);
  ASSERT_TRUE(cohort.ok());
  // Backfill: c runs [2,52) beside a; b still starts at 100.
  EXPECT_DOUBLE_EQ(cohort->mean_jct, (100 + 199 + 50) / 3.0);
  EXPECT_EQ(cohort->makespan, 200);
  EXPECT_EQ(cohort->p99_wait_largest, 99);  // b, the largest gang
  EXPECT_EQ(cohort->preemptions, 0);
}

TEST(Simulator, RefusesAJobLargerThanThePool) {
  SimulationConfig config;
  config.hosts = 1;
  config.slots_per_host = 2;
  Result<SimulationResult> r = Simulate(SmallTrace(), config);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "trace job 2 asks for 4 slots; the simulated pool has 2");
}

TEST(Simulator, PreemptedJobsResumeAndEveryJobFinishes) {
  // 16 slots saturated by low-priority work, then a high-priority gang.
  std::vector<TraceJob> trace = *ParseTrace(
      "0,a,p,16,10000,low,10000\n"
      "10,b,q,8,100,high,100\n",
      "preempt");
  SimulationConfig config;
  config.hosts = 2;
  config.slots_per_host = 8;
  config.checkpoint_s = 20;
  Result<SimulationResult> r = Simulate(trace, config);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->preemptions, 1);
  // a: SIGTERM at 10, exits at 30 with 9990 s left; b runs [30,130); a
  // resumes at 130 and finishes at 10120.
  EXPECT_EQ(r->makespan, 10120);
  EXPECT_DOUBLE_EQ(r->mean_jct, (10120 + 120) / 2.0);
}

TEST(Simulator, SaturatedSyntheticLoadKeepsSlotsBusyAndUsersEven) {
  SyntheticSpec spec;
  spec.hosts = 32;
  spec.slots_per_host = 8;
  spec.jobs = 1500;
  spec.users = 4;
  spec.seed = 7;
  spec.max_slots = 32;
  std::vector<TraceJob> trace = SyntheticTrace(spec);
  SimulationConfig config;
  config.hosts = spec.hosts;
  config.slots_per_host = spec.slots_per_host;
  config.policy.estimate_depth = 0;
  Result<SimulationResult> cohort = Simulate(trace, config);
  ASSERT_TRUE(cohort.ok());
  config.policy.kind = PolicyKind::kFifo;
  Result<SimulationResult> fifo = Simulate(trace, config);
  ASSERT_TRUE(fifo.ok());
  EXPECT_GT(cohort->utilization, 0.9);
  EXPECT_GT(cohort->utilization, fifo->utilization);
  EXPECT_LT(cohort->mean_jct, fifo->mean_jct);
  EXPECT_GT(cohort->jain, 0.9);
}

}  // namespace
}  // namespace cohort::sched
