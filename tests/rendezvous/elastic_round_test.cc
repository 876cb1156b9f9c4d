// Tests of the worker side of elastic rounds: members text, placement, and
// joining through a real store (the driver's keys written by the test).
#include "rendezvous/elastic_round.h"

#include <gtest/gtest.h>

#include <thread>

#include "rendezvous/store_server.h"

namespace cohort {
namespace {

TEST(ElasticRound, MembersRoundTripAndBadLinesAreNamed) {
  const std::vector<ElasticMember> members = {{"0", "a"}, {"3", "b"}, {"1", "a"}};
  Result<std::vector<ElasticMember>> back = ParseElasticMembers(FormatElasticMembers(members));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[1].worker, "3");
  EXPECT_EQ((*back)[1].host, "b");
  Result<std::vector<ElasticMember>> bad = ParseElasticMembers("0 a\n1\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "elastic round members, line 2: expected 'worker host', got '1'");
}

TEST(ElasticRound, PlacementNumbersHostsInOrderOfFirstAppearance) {
  const std::vector<ElasticMember> members = {{"0", "a"}, {"3", "b"}, {"1", "a"}, {"7", "b"}};
  Result<ElasticPlacement> p = PlaceElasticWorker(members, "7", 4);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->round, 4);
  EXPECT_EQ(p->rank, 3);
  EXPECT_EQ(p->size, 4);
  EXPECT_EQ(p->local_rank, 1);
  EXPECT_EQ(p->local_size, 2);
  EXPECT_EQ(p->cross_rank, 1);
  EXPECT_EQ(p->cross_size, 2);
  Result<ElasticPlacement> none = PlaceElasticWorker(members, "9", 4);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "worker 9 is not a member of elastic round 4");
}

class ElasticJoin : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<StoreServer>> server = StoreServer::Start("127.0.0.1", 0, "s");
    ASSERT_TRUE(server.ok());
    server_ = std::move(server).value();
    driver_ = Connect();
  }
  std::unique_ptr<StoreClient> Connect() {
    Result<std::unique_ptr<StoreClient>> c =
        StoreClient::Connect("127.0.0.1", server_->port(), "s", Deadline::AfterSeconds(10));
    EXPECT_TRUE(c.ok());
    return std::move(c).value();
  }
  // What the driver does: members first, then the counter.
  void Publish(int64_t round, const std::vector<ElasticMember>& members) {
    ASSERT_TRUE(
        driver_->Set(ElasticRoundKey(round, "members"), FormatElasticMembers(members)).ok());
    ASSERT_TRUE(driver_->Add(kElasticRoundKey, 1).ok());
  }
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<StoreClient> driver_;
};

TEST_F(ElasticJoin, JoinsWaitsForGoAndASecondJoinMovesToTheNextRound) {
  Publish(1, {{"5", "h"}, {"6", "h"}});
  std::unique_ptr<StoreClient> worker = Connect();
  Result<ElasticPlacement> first = Status::Internal("not joined");
  std::thread join([&] { first = JoinElasticRound(*worker, "6", 10); });
  // The join is recorded before the driver says go.
  ASSERT_TRUE(driver_->Get(ElasticRoundKey(1, "joined/6"), Deadline::AfterSeconds(10)).ok());
  ASSERT_TRUE(driver_->Set(ElasticRoundKey(1, "go"), "go").ok());
  join.join();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->round, 1);
  EXPECT_EQ(first->rank, 1);
  // Joining round 1 again is leaving it: the worker waits for round 2, where
  // it is rank 0, and skips round 2 when the driver supersedes it.
  Result<ElasticPlacement> second = Status::Internal("not joined");
  std::thread rejoin([&] { second = JoinElasticRound(*worker, "6", 10); });
  // The driver sees the second join (a request for a new round) and publishes one.
  const Deadline deadline = Deadline::AfterSeconds(10);
  while (*driver_->Add(ElasticRoundKey(1, "joined/6"), 0) < 2 && !deadline.Expired()) {
    std::this_thread::yield();
  }
  Publish(2, {{"6", "h"}, {"5", "h"}});
  ASSERT_TRUE(driver_->Get(ElasticRoundKey(2, "joined/6"), Deadline::AfterSeconds(10)).ok());
  ASSERT_TRUE(driver_->Set(ElasticRoundKey(2, "go"), "superseded").ok());
  Publish(3, {{"6", "h"}});
  ASSERT_TRUE(driver_->Set(ElasticRoundKey(3, "go"), "go").ok());
  rejoin.join();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->round, 3);
  EXPECT_EQ(second->size, 1);
}

TEST_F(ElasticJoin, AWorkerNotInTheNewestRoundWaitsForOneThatNamesIt) {
  Publish(1, {{"0", "h"}});
  std::unique_ptr<StoreClient> worker = Connect();
  Result<ElasticPlacement> p = Status::Internal("not joined");
  std::thread join([&] { p = JoinElasticRound(*worker, "1", 10); });
  Publish(2, {{"0", "h"}, {"1", "h"}});
  ASSERT_TRUE(driver_->Set(ElasticRoundKey(2, "go"), "go").ok());
  join.join();
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->round, 2);
  EXPECT_EQ(p->rank, 1);
}

TEST_F(ElasticJoin, ATimeoutNamesTheRound) {
  Publish(1, {{"0", "h"}});
  std::unique_ptr<StoreClient> worker = Connect();
  Result<ElasticPlacement> p = JoinElasticRound(*worker, "0", 0.2);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Status::Code::kTimeout);
  EXPECT_NE(
      p.status().message().find("elastic worker 0 waiting for round 1 (is the launcher gone?)"),
      std::string::npos)
      << p.status().message();
}

}  // namespace
}  // namespace cohort
