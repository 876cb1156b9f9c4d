// Tests of the rendezvous store and the job-secret handshake.
#include <gtest/gtest.h>

#include <dirent.h>

#include <thread>
#include <vector>

#include "net/auth.h"
#include "net/socket.h"
#include "rendezvous/store_client.h"
#include "rendezvous/store_server.h"

namespace cohort {
namespace {

std::unique_ptr<StoreServer> StartServer(const std::string& secret) {
  Result<std::unique_ptr<StoreServer>> server = StoreServer::Start("127.0.0.1", 0, secret);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return std::move(server).value();
}

TEST(Store, SetGetAddAndBarrier) {
  auto server = StartServer("s3cret");
  auto a = StoreClient::Connect("127.0.0.1", server->port(), "s3cret", Deadline::AfterSeconds(10));
  auto b = StoreClient::Connect("127.0.0.1", server->port(), "s3cret", Deadline::AfterSeconds(10));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE((*a)->Set("k", std::string("v\0x", 3)).ok());
  Result<std::string> got = (*b)->Get("k", Deadline::AfterSeconds(5));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, std::string("v\0x", 3));
  EXPECT_EQ(*(*a)->Add("n", 5), 5);
  EXPECT_EQ(*(*b)->Add("n", -2), 3);
  std::thread t([&] { EXPECT_TRUE((*a)->Barrier("b1", 2, Deadline::AfterSeconds(10)).ok()); });
  EXPECT_TRUE((*b)->Barrier("b1", 2, Deadline::AfterSeconds(10)).ok());
  t.join();
}

TEST(Store, GetWaitsForALaterSet) {
  auto server = StartServer("s");
  auto a = StoreClient::Connect("127.0.0.1", server->port(), "s", Deadline::AfterSeconds(10));
  auto b = StoreClient::Connect("127.0.0.1", server->port(), "s", Deadline::AfterSeconds(10));
  std::thread setter([&] { EXPECT_TRUE((*b)->Set("late", "yes").ok()); });
  Result<std::string> got = (*a)->Get("late", Deadline::AfterSeconds(10));
  setter.join();
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, "yes");
}

TEST(Store, GetTimesOutNamingTheKey) {
  auto server = StartServer("s");
  auto a = StoreClient::Connect("127.0.0.1", server->port(), "s", Deadline::AfterSeconds(10));
  Result<std::string> got = (*a)->Get("never", Deadline::AfterSeconds(0.2));
  EXPECT_EQ(got.status().code(), Status::Code::kTimeout);
  EXPECT_NE(got.status().message().find("'never'"), std::string::npos) << got.status().message();
}

TEST(Store, WrongSecretIsRefused) {
  auto server = StartServer("right");
  auto c = StoreClient::Connect("127.0.0.1", server->port(), "wrong", Deadline::AfterSeconds(10));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kUnauthenticated) << c.status().ToString();
  EXPECT_NE(c.status().message().find("wrong job secret"), std::string::npos);
  EXPECT_EQ(server->refused_connections(), 1);
}

TEST(Store, ConnectionThatSpeaksGarbageIsRefused) {
  auto server = StartServer("right");
  Result<Socket> raw = Socket::Connect("127.0.0.1", server->port(), Deadline::AfterSeconds(5));
  ASSERT_TRUE(raw.ok());
  Result<std::string> challenge = raw->RecvMessage(Deadline::AfterSeconds(5));
  ASSERT_TRUE(challenge.ok());
  ASSERT_TRUE(raw->SendMessage("GET everything please", Deadline::AfterSeconds(5)).ok());
  Result<std::string> verdict = raw->RecvMessage(Deadline::AfterSeconds(5));
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->substr(0, 2), "NO");
  EXPECT_EQ(server->refused_connections(), 1);  // counted before the refusal is sent
}

// A fixed port in use (another job's, or another step's) names the way out.
TEST(Store, PortInUseSuggestsCohortStorePort) {
  auto first = StartServer("s");
  Result<std::unique_ptr<StoreServer>> second = StoreServer::Start("127.0.0.1", first->port(), "s");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("(another job may be using port " +
                                           std::to_string(first->port()) +
                                           "; set COHORT_STORE_PORT to a free port on every rank)"),
            std::string::npos)
      << second.status().message();
}

int ThreadCount() {
  int n = 0;
  DIR* dir = ::opendir("/proc/self/task");
  while (dirent* e = ::readdir(dir)) n += e->d_name[0] != '.' ? 1 : 0;
  ::closedir(dir);
  return n;
}

// A stranger's connect-and-close connections and silent ones cost the store
// no thread, and the job's own clients still get through at once.
TEST(Store, StrangersCostNoThreadsAndDoNotStallTheJob) {
  auto server = StartServer("s");
  const int threads = ThreadCount();
  constexpr int kConnectAndClose = 3000, kSilent = 300;
  for (int i = 0; i < kConnectAndClose; ++i) {
    Result<Socket> s = Socket::Connect("127.0.0.1", server->port(), Deadline::AfterSeconds(5));
    ASSERT_TRUE(s.ok()) << i << ": " << s.status().ToString();
  }
  std::vector<Socket> silent;
  for (int i = 0; i < kSilent; ++i) {
    Result<Socket> s = Socket::Connect("127.0.0.1", server->port(), Deadline::AfterSeconds(5));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    silent.push_back(std::move(s).value());
  }
  const Clock::time_point start = Clock::now();
  constexpr int kRanks = 4;
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      auto c = StoreClient::Connect("127.0.0.1", server->port(), "s", Deadline::AfterSeconds(5));
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      ASSERT_TRUE((*c)->Set("rank/" + std::to_string(r), std::to_string(r * r)).ok());
      ASSERT_TRUE((*c)->Barrier("all", kRanks, Deadline::AfterSeconds(5)).ok());
      Result<std::string> peer =
          (*c)->Get("rank/" + std::to_string((r + 1) % kRanks), Deadline::AfterSeconds(5));
      ASSERT_TRUE(peer.ok());
      EXPECT_EQ(*peer, std::to_string(((r + 1) % kRanks) * ((r + 1) % kRanks)));
    });
  }
  for (std::thread& t : ranks) t.join();
  EXPECT_LT(SecondsSince(start), 3.0);
  // The store's own threads did not grow (the ranks' threads have ended).
  EXPECT_LE(ThreadCount(), threads);
  // Every connect-and-close was refused; so were the oldest silent ones, to
  // keep at most 256 connections in the handshake.
  // (Each rank's own connection may have pushed out one more.)
  constexpr int kEvicted = kConnectAndClose + kSilent - 256;
  const Deadline deadline = Deadline::AfterSeconds(10);
  while (server->refused_connections() < kEvicted && !deadline.Expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(server->refused_connections(), kEvicted);
  EXPECT_LE(server->refused_connections(), kEvicted + kRanks);
  Result<std::string> challenge = silent[0].RecvMessage(Deadline::AfterSeconds(5));
  ASSERT_TRUE(challenge.ok()) << challenge.status().ToString();
  EXPECT_EQ(silent[0].RecvMessage(Deadline::AfterSeconds(5)).status().code(),
            Status::Code::kPeerFailure);
}

TEST(Auth, ServerWithoutTheSecretIsRejectedByTheClient) {
  Result<Socket> listener = Socket::Listen("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok());
  const int port = *listener->LocalPort();
  Status server_side;
  std::thread server([&] {
    Result<Socket> s = listener->Accept(Deadline::AfterSeconds(5));
    ASSERT_TRUE(s.ok());
    server_side = AuthenticateServer(*s, "one", "mesh", Deadline::AfterSeconds(5));
  });
  Result<Socket> c = Socket::Connect("127.0.0.1", port, Deadline::AfterSeconds(5));
  ASSERT_TRUE(c.ok());
  Status client_side = AuthenticateClient(*c, "two", "mesh", Deadline::AfterSeconds(5));
  server.join();
  EXPECT_EQ(server_side.code(), Status::Code::kUnauthenticated);
  EXPECT_EQ(client_side.code(), Status::Code::kUnauthenticated);
}

TEST(Auth, PurposeIsBoundIntoTheMac) {
  Result<Socket> listener = Socket::Listen("127.0.0.1", 0);
  const int port = *listener->LocalPort();
  Status server_side;
  std::thread server([&] {
    Result<Socket> s = listener->Accept(Deadline::AfterSeconds(5));
    server_side = AuthenticateServer(*s, "same", "store", Deadline::AfterSeconds(5));
  });
  Result<Socket> c = Socket::Connect("127.0.0.1", port, Deadline::AfterSeconds(5));
  Status client_side = AuthenticateClient(*c, "same", "mesh", Deadline::AfterSeconds(5));
  server.join();
  EXPECT_FALSE(server_side.ok());
  EXPECT_FALSE(client_side.ok());
}

TEST(Auth, GeneratedSecretsAreLongAndDistinct) {
  std::string a = GenerateSecret(), b = GenerateSecret();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace cohort
