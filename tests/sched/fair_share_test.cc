// Decayed usage, the fair-share score, Jain's index and the availability profile.
#include "sched/fair_share.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sched/availability_profile.h"

namespace cohort::sched {
namespace {

TEST(FairShare, UsageHalvesEveryHalfLife) {
  Usage usage;
  usage.user["a"] = 1000;
  usage.project["p"] = 400;
  AdvanceUsage({}, 3600, 3600, &usage);
  EXPECT_DOUBLE_EQ(usage.user["a"], 500);
  EXPECT_DOUBLE_EQ(usage.project["p"], 200);
}

TEST(FairShare, RunningJobsAccrueSlotSeconds) {
  RunningJob job;
  job.spec = JobSpec{1, "a", "p", 4};
  Usage usage;
  AdvanceUsage({job}, 100, 0, &usage);  // no decay: exactly slots x seconds
  EXPECT_DOUBLE_EQ(usage.user["a"], 400);
  Usage decayed;
  AdvanceUsage({job}, 3600, 3600, &decayed);
  // 4 slots over one half-life: 4 * 3600 * (1 - 1/2) / ln 2.
  EXPECT_NEAR(decayed.user["a"], 4 * 3600 * 0.5 / std::log(2.0), 1e-6);
}

TEST(FairShare, ScoreDividesUsageByShare) {
  Usage usage;
  usage.user["a"] = 100;
  usage.project["p"] = 50;
  Shares shares;
  shares.user["a"] = 4;
  EXPECT_DOUBLE_EQ(FairShareScore(usage, shares, "a", "p"), 25 + 50);
  EXPECT_DOUBLE_EQ(FairShareScore(usage, shares, "nobody", "q"), 0);
}

TEST(FairShare, JainIndex) {
  EXPECT_DOUBLE_EQ(JainIndex({5, 5, 5, 5}), 1);
  EXPECT_DOUBLE_EQ(JainIndex({1, 0, 0, 0}), 0.25);
  EXPECT_DOUBLE_EQ(JainIndex({1, 3}), 16.0 / 20);
  EXPECT_DOUBLE_EQ(JainIndex({}), 1);
}

TEST(AvailabilityProfile, EarliestStartHoldsTheGangForItsDuration) {
  AvailabilityProfile profile(100, 2);
  profile.Release(150, 4);  // 6 free from 150
  profile.Release(300, 2);  // 8 free from 300
  EXPECT_EQ(profile.EarliestStart(2, 1000), 100);
  EXPECT_EQ(profile.EarliestStart(5, 10), 150);
  EXPECT_EQ(profile.EarliestStart(8, 10), 300);
  EXPECT_EQ(profile.EarliestStart(9, 10), HUGE_VAL);
  profile.Hold(150, 200, 6);  // nothing free during [150, 350) but the 2 from 300
  EXPECT_EQ(profile.FreeAt(200), 0);
  EXPECT_EQ(profile.FreeAt(320), 2);
  EXPECT_EQ(profile.FreeAt(350), 8);
  EXPECT_EQ(profile.EarliestStart(1, 40), 100);  // fits before the hold
  EXPECT_EQ(profile.EarliestStart(1, 60), 300);  // spans two steps from 300
  EXPECT_EQ(profile.EarliestStart(4, 10), 350);
}

}  // namespace
}  // namespace cohort::sched
