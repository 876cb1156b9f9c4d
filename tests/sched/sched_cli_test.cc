// `cohort sched simulate`: a trace file through all three policies (text and
// JSON), and bad arguments and traces as errors naming what was wrong.
#include <gtest/gtest.h>

#include <fstream>

#include "data/data_test_util.h"
#include "support/child_process.h"

namespace cohort::testing {
namespace {

TEST(SchedCli, SimulatesATraceForEveryPolicy) {
  data::testing::TempDir dir;
  const std::string trace = dir.Sub("trace.csv");
  std::ofstream(trace) << "submit,user,project,slots,duration,priority,max_time\n"
                          "0,a,p,2,100,normal,100\n"
                          "1,b,p,4,100,normal,100\n"
                          "2,c,p,1,50,normal,50\n";
  Finished json =
      RunCohort({"sched", "simulate", trace, "--hosts", "1", "--slots-per-host", "4", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_TRUE(Contains(json.out, "{\"policy\": \"cohort\", \"utilization\": ")) << json.out;
  EXPECT_TRUE(Contains(json.out,
                       "\"mean_jct\": 116.333, \"p99_jct\": 199.000, "
                       "\"p99_wait_largest\": 99.000"))
      << json.out;
  EXPECT_TRUE(Contains(json.out, "{\"policy\": \"fifo\"")) << json.out;
  EXPECT_TRUE(Contains(json.out, "{\"policy\": \"strict-priority\"")) << json.out;
  Finished text = RunCohort(
      {"sched", "simulate", trace, "--hosts", "1", "--slots-per-host", "4", "--policy", "fifo"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(Contains(text.out, "policy fifo\n")) << text.out;
  EXPECT_TRUE(Contains(text.out, "  mean JCT          182 s\n")) << text.out;
  EXPECT_FALSE(Contains(text.out, "policy cohort")) << text.out;
}

TEST(SchedCli, BadInputIsAnErrorNamingIt) {
  data::testing::TempDir dir;
  const std::string trace = dir.Sub("bad.csv");
  std::ofstream(trace) << "0,a,p,2,100,normal\n5,b,p,x,1,low\n";
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  };
  const Case cases[] = {
      {{"sched"}, 2, "cohort sched: missing command (simulate)"},
      {{"sched", "run"}, 2, "cohort sched: unknown command 'run'"},
      {{"sched", "simulate"}, 2, "give either a TRACE file or --synthetic"},
      {{"sched", "simulate", "--synthetic", "--hosts", "0"},
       2,
       "--hosts '0' is not a positive integer"},
      {{"sched", "simulate", "--synthetic", "--policy", "lifo"},
       2,
       "--policy: unknown policy 'lifo' (expected cohort, fifo or strict-priority)"},
      {{"sched", "simulate", "--synthetic", "--quota", "vision"},
       2,
       "--quota: 'vision' is not PROJECT=SLOTS"},
      {{"sched", "simulate", "--synthetic", "--bogus", "1"}, 2, "unknown option '--bogus'"},
      {{"sched", "simulate", "--synthetic", "--jobs"}, 2, "--jobs needs a value"},
      {{"sched", "simulate", trace},
       1,
       "cohort sched: " + trace + ":2: slots 'x' is not a non-negative number"},
      {{"sched", "simulate", dir.Sub("missing.csv")},
       1,
       "cohort sched: cannot open trace '" + dir.Sub("missing.csv") + "'"},
  };
  for (const Case& c : cases) {
    Finished f = RunCohort(c.args, 30);
    EXPECT_EQ(f.exit_code, c.exit_code) << c.message << "\n" << f.err;
    EXPECT_TRUE(Contains(f.err, c.message)) << f.err;
  }
  // A job larger than the pool names the pool's size.
  std::ofstream(trace) << "0,a,p,64,100,normal\n";
  Finished big = RunCohort({"sched", "simulate", trace, "--hosts", "2", "--slots-per-host", "8"});
  EXPECT_EQ(big.exit_code, 1);
  EXPECT_TRUE(Contains(big.err, "trace job 1 asks for 64 slots; the simulated pool has 16"))
      << big.err;
}

}  // namespace
}  // namespace cohort::testing
