// Tests of the response cache's slots: hits only for identical
// announcements, stable slots for known names, round-robin eviction.
#include "engine/response_cache.h"

#include <gtest/gtest.h>

namespace cohort {
namespace {

Announcement Tensor(const std::string& name, int64_t n) {
  Announcement a;
  a.name = name;
  a.shape = {n};
  return a;
}

TEST(ResponseCache, HitsOnlyIdenticalAnnouncements) {
  ResponseCache cache(4);
  EXPECT_EQ(cache.Find(Tensor("a", 8)), -1);
  cache.Insert(Tensor("a", 8));
  EXPECT_EQ(cache.Find(Tensor("a", 8)), 0);
  EXPECT_EQ(cache.Find(Tensor("a", 9)), -1);  // same name, other shape: a miss
  Announcement other_op = Tensor("a", 8);
  other_op.op = ReduceOp::kMax;
  EXPECT_EQ(cache.Find(other_op), -1);
  ASSERT_NE(cache.At(0), nullptr);
  EXPECT_EQ(cache.At(0)->name, "a");
  EXPECT_EQ(cache.At(3), nullptr);
  EXPECT_EQ(cache.At(99), nullptr);
}

TEST(ResponseCache, KnownNameKeepsItsSlotWhenItChanges) {
  ResponseCache cache(4);
  cache.Insert(Tensor("a", 8));
  cache.Insert(Tensor("b", 8));
  cache.Insert(Tensor("a", 16));
  EXPECT_EQ(cache.Find(Tensor("a", 16)), 0);
  EXPECT_EQ(cache.Find(Tensor("a", 8)), -1);
  EXPECT_EQ(cache.Find(Tensor("b", 8)), 1);
}

TEST(ResponseCache, EvictsRoundRobin) {
  ResponseCache cache(2);
  cache.Insert(Tensor("a", 1));
  cache.Insert(Tensor("b", 1));
  cache.Insert(Tensor("c", 1));  // takes slot 0 from "a"
  EXPECT_EQ(cache.Find(Tensor("a", 1)), -1);
  EXPECT_EQ(cache.Find(Tensor("b", 1)), 1);
  EXPECT_EQ(cache.Find(Tensor("c", 1)), 0);
}

TEST(ResponseCache, ZeroCapacityCachesNothing) {
  ResponseCache cache(0);
  cache.Insert(Tensor("a", 1));
  EXPECT_EQ(cache.Find(Tensor("a", 1)), -1);
}

TEST(CycleMessage, RoundTripsWithCacheBitsAndStalledNames) {
  CycleMessage m;
  m.announcements = {Tensor("x", 3)};
  m.announcements[0].splits = {1, 2};
  m.shutdown = true;
  m.stalled = {"late"};
  m.cached = {0x05, 0x80};
  CycleMessage back;
  ASSERT_TRUE(DecodeCycleMessage(EncodeCycleMessage(m), &back));
  EXPECT_TRUE(back.shutdown);
  EXPECT_EQ(back.stalled, m.stalled);
  EXPECT_EQ(back.cached, m.cached);
  ASSERT_EQ(back.announcements.size(), 1u);
  EXPECT_TRUE(SameAnnouncement(back.announcements[0], m.announcements[0]));
  std::string truncated = EncodeCycleMessage(m);
  truncated.pop_back();
  EXPECT_FALSE(DecodeCycleMessage(truncated, &back));
}

}  // namespace
}  // namespace cohort
