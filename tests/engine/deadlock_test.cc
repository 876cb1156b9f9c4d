// The deadlock verdict (engine/deadlock.h): who is deadlocked, and how it reads.
#include "engine/deadlock.h"

#include <gtest/gtest.h>

namespace cohort {
namespace {

StuckWait Wait(const std::string& name, std::vector<int32_t> missing,
               RequestKind kind = RequestKind::kAllreduce, int set = 0) {
  return StuckWait{set, name, kind, std::move(missing)};
}

TEST(Deadlock, TwoRanksWaitingForEachOther) {
  // Rank 0 in a test's allreduce, rank 1 already in the teardown barrier.
  const std::vector<std::vector<StuckWait>> stuck = {
      {Wait("x", {1})}, {Wait("barrier.noname", {0}, RequestKind::kBarrier)}};
  EXPECT_EQ(DeadlockedRanks(stuck), (std::vector<int>{0, 1}));
  EXPECT_EQ(DescribeDeadlock(stuck, {0, 1}, [](int r) { return "rank " + std::to_string(r); }),
            "rank 0 waits for allreduce 'x', which rank 1 has not submitted; rank 1 waits for "
            "barrier 'barrier.noname', which rank 0 has not submitted");
}

TEST(Deadlock, ARankThatIsNotStuckMaySubmitWhatTheOthersWaitFor) {
  // Rank 2 reports nothing (it is computing, or has not waited long enough).
  const std::vector<std::vector<StuckWait>> stuck = {{Wait("x", {1, 2})}, {Wait("y", {0})}, {}};
  EXPECT_TRUE(DeadlockedRanks(stuck).empty());
}

TEST(Deadlock, OnlyTheClosedGroupIsDeadlocked) {
  // Ranks 0 and 1 wait for each other; rank 2 waits for rank 3, which runs.
  const std::vector<std::vector<StuckWait>> stuck = {
      {Wait("a", {1})}, {Wait("b", {0})}, {Wait("c", {3})}, {}};
  EXPECT_EQ(DeadlockedRanks(stuck), (std::vector<int>{0, 1}));
  // ...and a rank waiting on the deadlocked group is part of it.
  const std::vector<std::vector<StuckWait>> chained = {
      {Wait("a", {1})}, {Wait("b", {0})}, {Wait("c", {0})}, {}};
  EXPECT_EQ(DeadlockedRanks(chained), (std::vector<int>{0, 1, 2}));
}

TEST(Deadlock, EveryWaitOfARankMustBeHopeless) {
  // Rank 0 has a second thread waiting for rank 2, which is not stuck.
  const std::vector<std::vector<StuckWait>> stuck = {
      {Wait("a", {1}), Wait("z", {2})}, {Wait("b", {0})}, {}};
  EXPECT_TRUE(DeadlockedRanks(stuck).empty());
}

TEST(Deadlock, MalformedReportsNeverConvict) {
  // No missing rank (it is complete) or a rank outside the job.
  EXPECT_TRUE(DeadlockedRanks({{Wait("a", {})}, {Wait("b", {0})}}).empty());
  EXPECT_TRUE(DeadlockedRanks({{Wait("a", {7})}, {Wait("b", {0})}}).empty());
}

TEST(Deadlock, ProcessSetsAndSeveralMissingRanksAreNamed) {
  const std::vector<std::vector<StuckWait>> stuck = {
      {Wait("g", {1, 2}, RequestKind::kAllgather, 3)}, {Wait("b", {0})}, {Wait("b", {0})}};
  EXPECT_EQ(DeadlockedRanks(stuck), (std::vector<int>{0, 1, 2}));
  const std::string text =
      DescribeDeadlock(stuck, {0}, [](int r) { return "rank " + std::to_string(r); });
  EXPECT_EQ(text,
            "rank 0 waits for allgather 'g' of process set 3, which ranks 1, 2 have not "
            "submitted");
}

}  // namespace
}  // namespace cohort
