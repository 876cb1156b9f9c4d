// Transport tests in the style of Gloo's: every Link implementation (TCP,
// striped TCP, shared-memory ring) is made as a connected pair inside one
// process and must move bytes exactly, in order, in both directions at once,
// through transfers larger than its buffers, and report a closed peer as
// kPeerFailure. A link change is then tested without starting a job.
#include "net/link.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "net/host_segment.h"
#include "net/socket.h"

namespace cohort {
namespace {

struct LinkPair {
  std::unique_ptr<Link> a, b;
  // What the links point into (shared-memory rings, doorbells), kept alive.
  std::vector<std::shared_ptr<void>> memory;
};

std::pair<Socket, Socket> ConnectedSockets() {
  Result<Socket> listener = Socket::Listen("127.0.0.1", 0);
  EXPECT_TRUE(listener.ok()) << listener.status().ToString();
  Result<int> port = listener->LocalPort();
  Result<Socket> client = Socket::Connect("127.0.0.1", *port, Deadline::AfterSeconds(10));
  Result<Socket> server = listener->Accept(Deadline::AfterSeconds(10));
  EXPECT_TRUE(client.ok() && server.ok());
  return {std::move(client).value(), std::move(server).value()};
}

LinkPair TcpPair() {
  auto [x, y] = ConnectedSockets();
  return {MakeTcpLink(std::move(x)), MakeTcpLink(std::move(y)), {}};
}

LinkPair StripedPair() {
  std::vector<Socket> xs, ys;
  for (int i = 0; i < 3; ++i) {
    auto [x, y] = ConnectedSockets();
    xs.push_back(std::move(x));
    ys.push_back(std::move(y));
  }
  return {MakeStripedTcpLink(std::move(xs)), MakeStripedTcpLink(std::move(ys)), {}};
}

LinkPair ShmPair() {
  constexpr size_t kCapacity = 64 << 10;  // smaller than the transfers below
  auto ring = [&] {
    void* p = std::aligned_alloc(64, ShmRingBytes(kCapacity));
    std::memset(p, 0, ShmRingBytes(kCapacity));
    InitShmRing(p, kCapacity);
    return std::shared_ptr<void>(p, std::free);
  };
  auto control = [] {
    return std::shared_ptr<void>(new HostControl{},
                                 [](void* p) { delete static_cast<HostControl*>(p); });
  };
  std::shared_ptr<void> a_to_b = ring(), b_to_a = ring(), ctl_a = control(), ctl_b = control();
  LinkPair pair;
  pair.a = MakeShmLink(a_to_b.get(), b_to_a.get(), static_cast<HostControl*>(ctl_b.get()));
  pair.b = MakeShmLink(b_to_a.get(), a_to_b.get(), static_cast<HostControl*>(ctl_a.get()));
  pair.memory = {a_to_b, b_to_a, ctl_a, ctl_b};
  return pair;
}

struct Transport {
  const char* name;
  std::function<LinkPair()> make;
};

class LinkTest : public testing::TestWithParam<Transport> {};

std::vector<unsigned char> Pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed) >> 3);
  return v;
}

// Pumps `send` over `from` and into `recv` from `to` without blocking, until
// both are done or the deadline passes.
struct Transfer {
  Link* from;
  Link* to;
  const std::vector<unsigned char>* send;
  std::vector<unsigned char> recv;
  size_t sent = 0, received = 0;
  bool done() const { return sent == send->size() && received == send->size(); }
  Status Step() {
    if (sent < send->size()) {
      Result<size_t> n = from->TrySend(send->data() + sent, send->size() - sent);
      if (!n.ok()) return n.status();
      sent += *n;
    }
    if (received < recv.size()) {
      Result<size_t> n = to->TryRecv(recv.data() + received, recv.size() - received);
      if (!n.ok()) return n.status();
      received += *n;
    }
    return Status::OK();
  }
};

TEST_P(LinkTest, MovesLargeBuffersExactlyInBothDirectionsAtOnce) {
  LinkPair pair = GetParam().make();
  ASSERT_STREQ(pair.a->kind(), pair.b->kind());
  const std::vector<unsigned char> ab = Pattern(3 << 20, 1), ba = Pattern((2 << 20) + 17, 2);
  Transfer forward{pair.a.get(), pair.b.get(), &ab, std::vector<unsigned char>(ab.size())};
  Transfer backward{pair.b.get(), pair.a.get(), &ba, std::vector<unsigned char>(ba.size())};
  const Deadline deadline = Deadline::AfterSeconds(30);
  while (!(forward.done() && backward.done()) && !deadline.Expired()) {
    ASSERT_TRUE(forward.Step().ok());
    ASSERT_TRUE(backward.Step().ok());
  }
  ASSERT_TRUE(forward.done() && backward.done()) << "no progress before the deadline";
  EXPECT_TRUE(forward.recv == ab);
  EXPECT_TRUE(backward.recv == ba);
}

TEST_P(LinkTest, ZeroBytesMoveNothing) {
  LinkPair pair = GetParam().make();
  unsigned char byte = 0;
  Result<size_t> sent = pair.a->TrySend(&byte, 0);
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(*sent, 0u);
  Result<size_t> got = pair.b->TryRecv(&byte, 1);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, 0u);  // nothing was sent: would block, not an error
}

TEST_P(LinkTest, AClosedPeerIsAPeerFailure) {
  LinkPair pair = GetParam().make();
  pair.a->Close();
  unsigned char buf[16] = {};
  const Deadline deadline = Deadline::AfterSeconds(10);
  Status seen;
  while (seen.ok() && !deadline.Expired()) {
    Result<size_t> got = pair.b->TryRecv(buf, sizeof(buf));
    if (!got.ok()) seen = got.status();
  }
  EXPECT_EQ(seen.code(), Status::Code::kPeerFailure) << seen.ToString();
}

INSTANTIATE_TEST_SUITE_P(Transports, LinkTest,
                         testing::Values(Transport{"tcp", TcpPair},
                                         Transport{"striped_tcp", StripedPair},
                                         Transport{"shm", ShmPair}),
                         [](const testing::TestParamInfo<Transport>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace cohort
