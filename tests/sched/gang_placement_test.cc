// Gang placement: all slots or none, on the fewest hosts, tightest last host.
#include "sched/gang_placement.h"

#include <gtest/gtest.h>

namespace cohort::sched {
namespace {

std::vector<std::pair<int, int>> Pairs(const std::vector<Placement>& placement) {
  std::vector<std::pair<int, int>> out;
  for (const Placement& p : placement) out.push_back({p.host, p.slots});
  return out;
}

TEST(GangPlacement, OneHostTakesTheTightestFit) {
  auto placed = PlaceGang({8, 3, 4, 8}, 3);
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(Pairs(*placed), (std::vector<std::pair<int, int>>{{1, 3}}));
}

TEST(GangPlacement, SpansTheFewestHosts) {
  // 12 slots: two hosts suffice (8 + 4 on the tightest remaining host).
  auto placed = PlaceGang({2, 8, 5, 4, 8}, 12);
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(Pairs(*placed), (std::vector<std::pair<int, int>>{{1, 8}, {3, 4}}));
  // 20 slots: 8 + 8 + 4.
  placed = PlaceGang({2, 8, 5, 4, 8}, 20);
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(Pairs(*placed), (std::vector<std::pair<int, int>>{{1, 8}, {4, 8}, {3, 4}}));
}

TEST(GangPlacement, AllOrNothing) {
  EXPECT_FALSE(PlaceGang({2, 3, 0}, 6).has_value());
  EXPECT_FALSE(PlaceGang({}, 1).has_value());
  auto placed = PlaceGang({2, 3, 0}, 5);
  ASSERT_TRUE(placed.has_value());
  std::vector<int> free = {2, 3, 0};
  ApplyPlacement(*placed, -1, &free);
  EXPECT_EQ(free, (std::vector<int>{0, 0, 0}));
}

TEST(GangPlacement, ReleasingOntoAnOversubscribedHostFirstPaysItsDebt) {
  // h0 holds 3 slots more than it has, h1 has 1 free.
  std::vector<int> free = {-3, 1};
  EXPECT_EQ(ReleasePlacement({{0, 2}, {1, 2}}, &free), 2);
  EXPECT_EQ(free, (std::vector<int>{-1, 3}));
  EXPECT_EQ(ReleasePlacement({{0, 4}}, &free), 3);
  EXPECT_EQ(free, (std::vector<int>{3, 3}));
  EXPECT_EQ(ReleasePlacement({}, &free), 0);
}

}  // namespace
}  // namespace cohort::sched
