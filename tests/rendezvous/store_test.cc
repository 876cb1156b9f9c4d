// Tests of the rendezvous store and the job-secret handshake.
#include <gtest/gtest.h>

#include <thread>

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
