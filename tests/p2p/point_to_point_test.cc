// Multi-process tests of point-to-point messages (p2p/point_to_point.h).
#include <gtest/gtest.h>
#include <signal.h>

#include <string>

#include "support/child_process.h"

namespace cohort::testing {
namespace {

// A rank that aborts (a pipeline stage whose code raised) while peers wait
// for a message from it: their receives fail at once with its reason, not
// at COHORT_TIMEOUT or when it exits (it stays alive until killed).
TEST(PointToPointAbort, PeersWaitingForAnAbortedRankFailAtOnceWithItsReason) {
  auto workers = StartWithTorchrunVariables(3, {TestBinary("p2p_worker"), "abort"}, {});
  for (int r = 0; r < 2; ++r) {
    Finished f = workers[r]->Finish(Deadline::AfterSeconds(60));
    EXPECT_EQ(f.exit_code, 0) << "rank " << r << ": " << f.out << f.err;
    EXPECT_TRUE(Contains(f.out, "aborted: stage exploded")) << f.out;
    EXPECT_LT(f.seconds, 10) << f.out;
  }
  ::kill(workers[2]->pid(), SIGKILL);  // it would stay 15 s
  workers[2]->Finish(Deadline::AfterSeconds(60));
}

}  // namespace
}  // namespace cohort::testing
