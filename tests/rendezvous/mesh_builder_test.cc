// Tests of mesh construction options: emulated hosts (COHORT_TEST_HOSTS) and
// several TCP streams per pair of ranks (COHORT_TCP_STREAMS). Each rank of a
// small job is a thread of this process, joined through an in-process store.
#include <gtest/gtest.h>
#include <poll.h>

#include <functional>
#include <thread>
#include <vector>

#include "net/socket.h"
#include "rendezvous/mesh_builder.h"
#include "rendezvous/store_server.h"

namespace cohort {
namespace {

constexpr char kSecret[] = "mesh-test";

struct Built {
  Status status;
  Mesh mesh;
};

// Builds the mesh of an `n`-rank job, one thread per rank; `adjust` sets
// each rank's options. With `meanwhile`, rank 0 starts first and the other
// ranks only after meanwhile(store port) returns.
std::vector<Built> BuildJob(int n, const std::function<void(MeshOptions&)>& adjust,
                            const std::function<void(int)>& meanwhile = nullptr) {
  Result<std::unique_ptr<StoreServer>> server = StoreServer::Start("127.0.0.1", 0, kSecret);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  std::vector<std::unique_ptr<StoreClient>> clients(n);
  std::vector<Built> built(n);
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back([&, r] {
      Result<std::unique_ptr<StoreClient>> client =
          StoreClient::Connect("127.0.0.1", (*server)->port(), kSecret, Deadline::AfterSeconds(20));
      if (!client.ok()) {
        built[r].status = client.status();
        return;
      }
      clients[r] = std::move(client).value();
      MeshOptions o;
      o.rank = r;
      o.size = n;
      o.secret = kSecret;
      o.listen_host = "127.0.0.1";
      o.timeout_seconds = 20;
      adjust(o);
      Result<Mesh> mesh = BuildMesh(*clients[r], o);
      built[r].status = mesh.status();
      if (mesh.ok()) built[r].mesh = std::move(mesh).value();
    });
    if (r == 0 && meanwhile) meanwhile((*server)->port());
  }
  for (std::thread& t : ranks) t.join();
  return built;
}

TEST(MeshBuilder, TestHostsSplitRanksIntoEmulatedHosts) {
  std::vector<Built> job = BuildJob(4, [](MeshOptions& o) { o.test_hosts = "0,1,0,1"; });
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(job[r].status.ok()) << job[r].status.ToString();
    const Mesh& m = job[r].mesh;
    EXPECT_EQ(m.local_size, 2);
    EXPECT_EQ(m.cross_size, 2);
    EXPECT_EQ(m.cross_rank, r % 2);
    EXPECT_EQ(m.local_rank, r / 2);
    EXPECT_EQ(m.hosts, (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));
    EXPECT_EQ(m.local_ranks, m.hosts[r % 2]);
    for (int p = 0; p < 4; ++p) {
      if (p == r) continue;
      // Shared memory within an emulated host, TCP between them.
      EXPECT_STREQ(m.links[p]->kind(), p % 2 == r % 2 ? "shm" : "tcp") << r << " -> " << p;
    }
  }
  EXPECT_NE(job[0].mesh.Describe(1).find("/test-host-1"), std::string::npos)
      << job[0].mesh.Describe(1);
}

TEST(MeshBuilder, ParseTestHostsRejectsBadLists) {
  EXPECT_EQ(*ParseTestHosts("0,0,1,1", 4), (std::vector<int>{0, 0, 1, 1}));
  Status short_list = ParseTestHosts("0,1", 4).status();
  EXPECT_EQ(short_list.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(short_list.message().find("names the host of 2 ranks but the job has 4"),
            std::string::npos)
      << short_list.message();
  Status bad_entry = ParseTestHosts("0,x,1", 3).status();
  EXPECT_NE(bad_entry.message().find("entry 1 ('x') is not a host number"), std::string::npos)
      << bad_entry.message();
  EXPECT_FALSE(ParseTestHosts("0,-1", 2).ok());
  EXPECT_FALSE(ParseTestHosts("0,1x", 2).ok());
}

TEST(MeshBuilder, TcpStreamsMustAgreeOnEveryRank) {
  std::vector<Built> job = BuildJob(2, [](MeshOptions& o) { o.tcp_streams = o.rank == 0 ? 1 : 4; });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(job[r].status.code(), Status::Code::kInvalidArgument) << job[r].status.ToString();
    EXPECT_NE(job[r].status.message().find("COHORT_TCP_STREAMS must be the same on every rank"),
              std::string::npos)
        << job[r].status.ToString();
  }
}

// A stranger's silent connection and a garbled one, made to rank 0's mesh
// port before the real peers connect, are dropped; the job starts at once.
TEST(MeshBuilder, SilentAndGarbageConnectionsDoNotDelayTheJob) {
  std::vector<Socket> strangers;
  const Clock::time_point start = Clock::now();
  std::vector<Built> job = BuildJob(
      3,
      [](MeshOptions& o) {
        o.force_tcp = true;
        o.timeout_seconds = 8;
      },
      [&](int store_port) {
        auto store =
            StoreClient::Connect("127.0.0.1", store_port, kSecret, Deadline::AfterSeconds(5));
        ASSERT_TRUE(store.ok());
        Result<std::string> record = (*store)->Get("mesh/peer/0", Deadline::AfterSeconds(5));
        ASSERT_TRUE(record.ok());
        // host key, hostname, address, pid, streams
        std::string address = record->substr(0, record->rfind('\t'));
        address = address.substr(0, address.rfind('\t'));
        address = address.substr(address.rfind('\t') + 1);
        std::string host;
        int port = 0;
        ASSERT_TRUE(ParseHostPort(address, "mesh address", &host, &port).ok()) << address;
        for (int i = 0; i < 2; ++i) {
          Result<Socket> s = Socket::Connect(host, port, Deadline::AfterSeconds(5));
          ASSERT_TRUE(s.ok());
          strangers.push_back(std::move(s).value());
        }
        const std::string garbage = "GET / HTTP/1.0\r\n\r\n";
        ASSERT_TRUE(
            strangers[1].SendAll(garbage.data(), garbage.size(), Deadline::AfterSeconds(5)).ok());
      });
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(job[r].status.ok()) << job[r].status.ToString();
  EXPECT_LT(SecondsSince(start), 6.0);  // the silent connection would hold it 8 s
  // The garbled connection was refused and closed; the silent one is still
  // waiting for its deadline (but blocked nobody).
  char byte;
  Result<std::string> challenge = strangers[1].RecvMessage(Deadline::AfterSeconds(5));
  ASSERT_TRUE(challenge.ok());
  EXPECT_EQ(strangers[1].RecvAll(&byte, 1, Deadline::AfterSeconds(5)).code(),
            Status::Code::kPeerFailure);
}

// Moves `out` to the peer while receiving `in` from it, through non-blocking
// TrySend/TryRecv and poll(2) on the descriptors the link names.
Status Exchange(Link& link, const std::vector<unsigned char>& out, std::vector<unsigned char>& in) {
  size_t sent = 0, received = 0;
  const Deadline deadline = Deadline::AfterSeconds(30);
  while (sent < out.size() || received < in.size()) {
    if (deadline.Expired()) return Status::Timeout("exchange did not finish");
    bool moved = false;
    if (sent < out.size()) {
      Result<size_t> n = link.TrySend(out.data() + sent, out.size() - sent);
      if (!n.ok()) return n.status();
      sent += *n;
      moved = moved || *n > 0;
    }
    if (received < in.size()) {
      Result<size_t> n = link.TryRecv(in.data() + received, in.size() - received);
      if (!n.ok()) return n.status();
      received += *n;
      moved = moved || *n > 0;
    }
    if (moved) continue;
    std::vector<pollfd> fds;
    if (sent < out.size()) fds.push_back(pollfd{link.send_fd(), POLLOUT, 0});
    if (received < in.size()) fds.push_back(pollfd{link.recv_fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), 100);
  }
  return Status::OK();
}

std::vector<unsigned char> Pattern(size_t n, int seed) {
  std::vector<unsigned char> bytes(n);
  for (size_t i = 0; i < n; ++i)
    bytes[i] = static_cast<unsigned char>((i * 131 + seed * 7 + i / 65536) & 0xff);
  return bytes;
}

// Several transfers of odd sizes, each crossing stripe boundaries at a
// different phase, arrive exactly, in both directions at once.
TEST(MeshBuilder, StripedTcpLinkDeliversEveryByteInOrder) {
  std::vector<Built> job = BuildJob(2, [](MeshOptions& o) {
    o.tcp_streams = 4;
    o.force_tcp = true;
  });
  ASSERT_TRUE(job[0].status.ok()) << job[0].status.ToString();
  ASSERT_TRUE(job[1].status.ok()) << job[1].status.ToString();
  for (size_t size : {size_t{1}, size_t{0}, kStripeBytes - 1, size_t{3} * kStripeBytes + 5,
                      size_t{5} << 20 | 3}) {
    Status results[2];
    std::vector<unsigned char> got[2];
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.emplace_back([&, r] {
        got[r].resize(size);
        results[r] = Exchange(*job[r].mesh.links[1 - r], Pattern(size, r), got[r]);
      });
    }
    for (std::thread& t : ranks) t.join();
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(results[r].ok()) << results[r].ToString();
      EXPECT_TRUE(got[r] == Pattern(size, 1 - r)) << "rank " << r << " size " << size;
    }
  }
}

}  // namespace
}  // namespace cohort
