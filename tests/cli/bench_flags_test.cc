// Bad numeric flags of `cohort bench` are usage errors naming the flag and
// the value, never silently replaced by a default.
#include <gtest/gtest.h>

#include "support/child_process.h"

namespace cohort::testing {
namespace {

TEST(BenchFlags, BadNumbersAreUsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{"bench", "engine", "--steps", "abc"}, "--steps 'abc' is not a positive integer"},
      {{"bench", "engine", "--warmup", "-1"}, "--warmup '-1' is not a non-negative integer"},
      {{"bench", "engine", "--delay-us", "x"}, "--delay-us 'x' is not a non-negative number"},
      {{"bench", "allreduce", "-n", "0"}, "-n '0' is not a positive integer"},
      {{"bench", "allreduce", "-w", "2x"}, "-w '2x' is not a non-negative integer"},
      {{"bench", "allreduce", "-f", "1"}, "-f must be greater than 1"},
  };
  for (const Case& c : cases) {
    Finished f = RunCohort(c.args, 30);
    EXPECT_EQ(f.exit_code, 2) << c.message;
    EXPECT_TRUE(Contains(f.err, c.message)) << f.err;
  }
}

}  // namespace
}  // namespace cohort::testing
