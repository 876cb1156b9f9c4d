// The scheduling pass on small hand-made states: gangs, priority classes,
// fair share, quotas and borrowing, reclaiming, backfill around the head's
// reservation, preemption, and the reasons and estimates waiting jobs get.
#include "sched/policy.h"

#include <gtest/gtest.h>

#include <utility>

namespace cohort::sched {
namespace {

QueueState Pool(int hosts, int slots, double now = 0) {
  QueueState state;
  state.now = now;
  for (int h = 0; h < hosts; ++h) {
    std::string name = "h";  // appended, not `"h" + ...`: GCC 12 -Wrestrict misfires on that
    name += std::to_string(h);
    state.hosts.push_back({name, slots});
  }
  return state;
}

JobSpec Job(uint64_t id, const std::string& user, int slots, double submitted,
            double max_time = 3600, PriorityClass priority = PriorityClass::kNormal,
            const std::string& project = "") {
  JobSpec job;
  job.id = id;
  job.user = user;
  job.project = project.empty() ? user : project;
  job.slots = slots;
  job.priority = priority;
  job.submitted = submitted;
  job.max_time = max_time;
  return job;
}

RunningJob Running(JobSpec spec, double started, std::vector<Placement> placement,
                   bool borrowed = false) {
  RunningJob job;
  job.spec = std::move(spec);
  job.started = started;
  job.placement = std::move(placement);
  job.borrowed = borrowed;
  return job;
}

PolicyConfig Config(PolicyKind kind = PolicyKind::kCohort) {
  PolicyConfig config;
  config.kind = kind;
  return config;
}

std::vector<uint64_t> Started(const Decision& d) {
  std::vector<uint64_t> ids;
  for (const StartDecision& s : d.starts) ids.push_back(s.job);
  return ids;
}

// The first start's placement as (host, slots) pairs.
std::vector<std::pair<int, int>> FirstPlacement(const Decision& d) {
  std::vector<std::pair<int, int>> placed;
  for (const Placement& p : d.starts.at(0).placement) placed.emplace_back(p.host, p.slots);
  return placed;
}

std::vector<uint64_t> Order(const QueueState& state, PolicyKind kind) {
  std::vector<uint64_t> ids;
  for (size_t i : QueueOrder(state, Config(kind))) ids.push_back(state.pending[i].id);
  return ids;
}

TEST(Policy, GangsStartWholeOrWaitWithAReasonAndEstimate) {
  QueueState state = Pool(2, 8);
  state.pending = {Job(1, "a", 12, 0), Job(2, "a", 8, 1), Job(3, "a", 20, 2)};
  Decision d = Schedule(state, Config());
  ASSERT_EQ(Started(d), (std::vector<uint64_t>{1}));
  ASSERT_EQ(d.starts[0].placement.size(), 2u);
  EXPECT_EQ(d.starts[0].placement[0].host, 0);
  EXPECT_EQ(d.starts[0].placement[0].slots, 8);
  EXPECT_EQ(d.starts[0].placement[1].host, 1);
  EXPECT_EQ(d.starts[0].placement[1].slots, 4);
  EXPECT_FALSE(d.starts[0].backfilled);
  ASSERT_EQ(d.pending.size(), 2u);
  EXPECT_EQ(d.pending[0].job, 2u);
  EXPECT_EQ(d.pending[0].position, 1);
  EXPECT_EQ(d.pending[0].reason,
            "first in line: needs 8 slots, 4 free; slots reserved from when running jobs end "
            "(in 3600 s)");
  EXPECT_EQ(d.pending[0].estimated_start, 3600);
  EXPECT_EQ(d.pending[1].job, 3u);
  EXPECT_EQ(d.pending[1].position, 2);
  EXPECT_EQ(d.pending[1].reason, "needs 20 slots; the pool has only 16");
  EXPECT_EQ(d.pending[1].estimated_start, -1);
}

TEST(Policy, InvalidSlotCountWaitsWithAReason) {
  QueueState state = Pool(1, 4);
  state.pending = {Job(1, "a", 0, 0)};
  Decision d = Schedule(state, Config());
  EXPECT_TRUE(d.starts.empty());
  ASSERT_EQ(d.pending.size(), 1u);
  EXPECT_EQ(d.pending[0].reason, "asks for 0 slots; a job needs at least 1");
}

TEST(Policy, PriorityClassesComeFirstExceptUnderFifo) {
  QueueState state = Pool(1, 4);
  state.pending = {Job(1, "a", 4, 0), Job(2, "b", 4, 10, 3600, PriorityClass::kHigh),
                   Job(3, "c", 4, 5, 3600, PriorityClass::kLow)};
  EXPECT_EQ(Order(state, PolicyKind::kCohort), (std::vector<uint64_t>{2, 1, 3}));
  EXPECT_EQ(Order(state, PolicyKind::kStrictPriority), (std::vector<uint64_t>{2, 1, 3}));
  EXPECT_EQ(Order(state, PolicyKind::kFifo), (std::vector<uint64_t>{1, 3, 2}));
  EXPECT_EQ(Started(Schedule(state, Config())), (std::vector<uint64_t>{2}));
  EXPECT_EQ(Started(Schedule(state, Config(PolicyKind::kFifo))), (std::vector<uint64_t>{1}));
}

TEST(Policy, FairShareServesTheLeastServedUserFirstAndInterleaves) {
  QueueState state = Pool(1, 2);
  state.pending = {Job(1, "a", 1, 0, 100), Job(2, "a", 1, 1, 100), Job(3, "b", 1, 2, 100),
                   Job(4, "b", 1, 3, 100)};
  // Equal usage: users alternate, each in submission order.
  EXPECT_EQ(Order(state, PolicyKind::kCohort), (std::vector<uint64_t>{1, 3, 2, 4}));
  // a used much more recently: b's jobs go first, though submitted later.
  state.usage.user["a"] = 10000;
  EXPECT_EQ(Order(state, PolicyKind::kCohort), (std::vector<uint64_t>{3, 4, 1, 2}));
  Decision d = Schedule(state, Config());
  EXPECT_EQ(Started(d), (std::vector<uint64_t>{3, 4}));
  // A larger share for a outweighs most of the usage: a's jobs come next to b's.
  state.shares.user["a"] = 1000;
  EXPECT_EQ(Order(state, PolicyKind::kCohort), (std::vector<uint64_t>{3, 1, 2, 4}));
  // Project usage counts too.
  state.shares.user.clear();
  state.usage.user.clear();
  state.usage.project["b"] = 500;
  EXPECT_EQ(Order(state, PolicyKind::kCohort), (std::vector<uint64_t>{1, 2, 3, 4}));
}

TEST(Policy, JobsWithinQuotaGoFirstAndBorrowingIsMarked) {
  QueueState state = Pool(1, 8);
  state.quota = {{"p", 4}, {"q", 4}};
  state.pending = {Job(1, "alice", 4, 0, 3600, PriorityClass::kNormal, "p"),
                   Job(2, "alice", 4, 1, 3600, PriorityClass::kNormal, "p"),
                   Job(3, "bob", 2, 2, 3600, PriorityClass::kNormal, "q"),
                   Job(4, "bob", 4, 3, 3600, PriorityClass::kNormal, "q")};
  // 2 would exceed p's quota and 4 q's: both borrow, so they come last.
  EXPECT_EQ(Order(state, PolicyKind::kCohort), (std::vector<uint64_t>{1, 3, 4, 2}));
  Decision d = Schedule(state, Config());
  EXPECT_EQ(Started(d), (std::vector<uint64_t>{1, 3}));
  EXPECT_TRUE(d.preemptions.empty());
  ASSERT_EQ(d.pending.size(), 2u);
  EXPECT_EQ(d.pending[0].job, 4u);
  EXPECT_EQ(d.pending[0].reason,
            "first in line: needs 4 slots, 2 free; slots reserved from when running jobs end "
            "(in 3600 s); project q is beyond its quota of 4 slots, so this job runs only on "
            "idle capacity");
  EXPECT_EQ(d.pending[1].reason,
            "waiting for 4 slots (2 free); behind job 4; project p is beyond its quota of 4 "
            "slots, so this job runs only on idle capacity");
  // With idle capacity, the borrowing job starts, marked as borrowed.
  state.pending = {Job(1, "alice", 4, 0, 3600, PriorityClass::kNormal, "p"),
                   Job(2, "alice", 4, 1, 3600, PriorityClass::kNormal, "p")};
  d = Schedule(state, Config());
  ASSERT_EQ(Started(d), (std::vector<uint64_t>{1, 2}));
  EXPECT_FALSE(d.starts[0].borrowed);
  EXPECT_TRUE(d.starts[1].borrowed);
  EXPECT_TRUE(d.preemptions.empty());
}

TEST(Policy, QuotaIsReclaimedFromTheBorrower) {
  QueueState state = Pool(1, 8, 100);
  state.quota = {{"p", 4}, {"q", 4}};
  state.running = {
      Running(Job(1, "alice", 4, 0, 10000, PriorityClass::kNormal, "p"), 0, {{0, 4}}),
      Running(Job(2, "alice", 4, 0, 10000, PriorityClass::kNormal, "p"), 50, {{0, 4}}, true)};
  state.pending = {Job(3, "bob", 4, 60, 3600, PriorityClass::kNormal, "q")};
  Decision d = Schedule(state, Config());
  EXPECT_TRUE(d.starts.empty());
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].job, 2u);
  EXPECT_EQ(d.preemptions[0].grace_s, 60);
  EXPECT_EQ(d.preemptions[0].reason,
            "project q reclaims its quota for job 3 (this job borrowed beyond project p's quota)");
  ASSERT_EQ(d.pending.size(), 1u);
  EXPECT_EQ(d.pending[0].reason,
            "first in line: needs 4 slots, 0 free; preempting job 2 (grace 60 s)");
  EXPECT_EQ(d.pending[0].estimated_start, 160);
  // The next pass, while job 2 is in its grace period, preempts nothing more.
  state.running[1].terminating = true;
  state.running[1].terminating_since = 100;
  state.now = 130;
  d = Schedule(state, Config());
  EXPECT_TRUE(d.preemptions.empty());
  EXPECT_EQ(d.pending[0].reason,
            "first in line: needs 4 slots, 0 free; slots reserved from when running jobs end "
            "(in 30 s)");
  // A job beyond its own quota reclaims nothing.
  state.running[1].terminating = false;
  state.pending = {Job(3, "bob", 6, 60, 3600, PriorityClass::kNormal, "q")};
  EXPECT_TRUE(Schedule(state, Config()).preemptions.empty());
}

TEST(Policy, HigherPriorityPreemptsTheYoungestLowerJobs) {
  QueueState state = Pool(1, 4, 1000);
  state.running = {Running(Job(1, "a", 2, 0, 10000, PriorityClass::kLow), 0, {{0, 2}}),
                   Running(Job(2, "a", 2, 0, 10000, PriorityClass::kLow), 500, {{0, 2}})};
  state.pending = {Job(3, "b", 2, 900, 3600, PriorityClass::kHigh)};
  Decision d = Schedule(state, Config());
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].job, 2u);
  EXPECT_EQ(d.preemptions[0].reason, "preempted for job 3 (high priority)");
  // Baselines never preempt.
  EXPECT_TRUE(Schedule(state, Config(PolicyKind::kStrictPriority)).preemptions.empty());
  // Nor does cohort when the running jobs end within the grace period anyway.
  state.running[0].spec.max_time = 1030;
  d = Schedule(state, Config());
  EXPECT_TRUE(d.preemptions.empty());
  EXPECT_EQ(d.pending[0].reason,
            "first in line: needs 2 slots, 0 free; slots reserved from when running jobs end "
            "(in 30 s)");
  // Equal priority is no reason to preempt.
  state.running[0].spec.max_time = 10000;
  state.pending[0].priority = PriorityClass::kLow;
  EXPECT_TRUE(Schedule(state, Config()).preemptions.empty());
}

// 8 slots on 2 hosts, 7 busy until t=1000; the head needs all 8.
QueueState ReservedHead() {
  QueueState state = Pool(2, 4);
  state.running = {Running(Job(1, "a", 7, 0, 1000), 0, {{0, 4}, {1, 3}})};
  state.pending = {Job(2, "b", 8, 1, 2000)};
  return state;
}

TEST(Policy, BackfillOnlyWhereItDoesNotDelayTheHead) {
  QueueState state = ReservedHead();
  state.pending.push_back(Job(3, "c", 1, 2, 500));  // ends by t=1000: may backfill
  Decision d = Schedule(state, Config());
  ASSERT_EQ(Started(d), (std::vector<uint64_t>{3}));
  EXPECT_TRUE(d.starts[0].backfilled);
  EXPECT_EQ(d.starts[0].placement[0].host, 1);
  EXPECT_EQ(d.pending[0].estimated_start, 1000);

  state = ReservedHead();
  state.pending.push_back(Job(3, "c", 1, 2, 5000));  // would still run at t=1000
  d = Schedule(state, Config());
  EXPECT_TRUE(d.starts.empty());
  ASSERT_EQ(d.pending.size(), 2u);
  EXPECT_EQ(d.pending[1].reason,
            "would delay job 2, reserved to start in 1000 s: this job may run 5000 s and only 0 "
            "slots are free beyond then");
  EXPECT_EQ(d.pending[1].estimated_start, 3000);  // after the head's 2000 s

  // A long job may use slots the reservation leaves over.
  state = ReservedHead();
  state.running[0].spec.slots = 6;
  state.running[0].placement = {{0, 4}, {1, 2}};
  state.pending[0].slots = 7;  // reserved 4 on h0 and 3 on h1: one slot of h1 stays over
  state.pending.push_back(Job(3, "c", 1, 2, 5000));
  d = Schedule(state, Config());
  EXPECT_EQ(Started(d), (std::vector<uint64_t>{3}));
}

TEST(Policy, BaselinesDoNotBackfill) {
  QueueState state = ReservedHead();
  state.pending.push_back(Job(3, "c", 1, 2, 500));
  for (PolicyKind kind : {PolicyKind::kFifo, PolicyKind::kStrictPriority}) {
    Decision d = Schedule(state, Config(kind));
    EXPECT_TRUE(d.starts.empty());
    ASSERT_EQ(d.pending.size(), 2u);
    EXPECT_EQ(d.pending[1].reason, std::string("behind job 2, which waits for 8 slots (") +
                                       PolicyName(kind) + " does not backfill)");
  }
}

TEST(Policy, WaitingForSlotsBehindTheHead) {
  QueueState state = ReservedHead();
  state.pending.push_back(Job(3, "c", 1, 2, 500));
  state.pending.push_back(Job(4, "d", 2, 3, 500));
  Decision d = Schedule(state, Config());
  EXPECT_EQ(Started(d), (std::vector<uint64_t>{3}));
  ASSERT_EQ(d.pending.size(), 2u);
  EXPECT_EQ(d.pending[1].job, 4u);
  EXPECT_EQ(d.pending[1].reason, "waiting for 2 slots (0 free); behind job 2");
}

// A host whose running jobs hold more than its slots (an agent that came
// back with fewer slots than the jobs it still runs): its debt is paid from
// the first releases on it before any of its slots count as free. The queue
// server's scheduler thread read a placement out of an empty optional here.
TEST(Policy, AnOversubscribedHostPaysItsDebtBeforeItsSlotsAreReserved) {
  QueueState state = Pool(1, 2);
  state.running = {Running(Job(1, "a", 2, 0, 1000), 0, {{0, 2}}),
                   Running(Job(2, "a", 2, 0, 2000), 0, {{0, 2}})};
  state.pending = {Job(3, "b", 2, 1, 100), Job(4, "c", 1, 2, 100)};
  Decision d = Schedule(state, Config());
  EXPECT_TRUE(d.starts.empty());
  EXPECT_TRUE(d.preemptions.empty());
  ASSERT_EQ(d.pending.size(), 2u);
  EXPECT_EQ(d.pending[0].job, 3u);
  EXPECT_EQ(d.pending[0].reason,
            "first in line: needs 2 slots, 0 free; slots reserved from when running jobs end "
            "(in 2000 s)");
  EXPECT_EQ(d.pending[0].estimated_start, 2000);
  EXPECT_EQ(d.pending[1].reason, "waiting for 1 slots (0 free); behind job 3");
  EXPECT_EQ(d.pending[1].estimated_start, 2100);
  // Debt on one host is not paid by another's free slots: h1's two start job 3.
  state = Pool(2, 2);
  state.running = {Running(Job(1, "a", 4, 0, 1000), 0, {{0, 4}})};
  state.pending = {Job(3, "b", 2, 1, 100), Job(4, "c", 1, 2, 100)};
  d = Schedule(state, Config());
  ASSERT_EQ(Started(d), (std::vector<uint64_t>{3}));
  EXPECT_EQ(FirstPlacement(d), (std::vector<std::pair<int, int>>{{1, 2}}));
  ASSERT_EQ(d.pending.size(), 1u);
  EXPECT_EQ(d.pending[0].reason,
            "first in line: needs 1 slots, 0 free; slots reserved from when running jobs end "
            "(in 100 s)");
  EXPECT_EQ(d.pending[0].estimated_start, 100);
}

// Placements the pool cannot hold (a host it does not list, no or negative
// slots) hold nothing, and a host of negative slots has none.
TEST(Policy, PlacementsOutsideThePoolHoldNothing) {
  QueueState state = Pool(2, 4);
  state.hosts[1].slots = -3;
  state.running = {Running(Job(1, "a", 4, 0, 1000), 0, {{2, 4}, {-1, 4}, {1, 2}}),
                   Running(Job(2, "a", 4, 0, 1000), 0, {{0, 0}, {0, -4}})};
  state.pending = {Job(3, "b", 4, 1, 100), Job(4, "c", 1, 2, 100)};
  Decision d = Schedule(state, Config());
  ASSERT_EQ(Started(d), (std::vector<uint64_t>{3}));
  EXPECT_EQ(FirstPlacement(d), (std::vector<std::pair<int, int>>{{0, 4}}));
  ASSERT_EQ(d.pending.size(), 1u);
  EXPECT_EQ(d.pending[0].reason,
            "first in line: needs 1 slots, 0 free; slots reserved from when running jobs end "
            "(in 100 s)");
  state.pending = {Job(5, "b", 5, 1, 100)};
  d = Schedule(state, Config());
  ASSERT_EQ(d.pending.size(), 1u);
  EXPECT_EQ(d.pending[0].reason, "needs 5 slots; the pool has only 4");
}

}  // namespace
}  // namespace cohort::sched
