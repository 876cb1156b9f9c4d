// Mesh construction: publish, learn the peers, connect TCP, map shared memory.
#include "rendezvous/mesh_builder.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <list>
#include <map>
#include <random>
#include <sstream>

#include "common/logging.h"
#include "net/auth.h"
#include "net/cma.h"
#include "net/framed_connection.h"
#include "net/socket.h"

namespace cohort {
namespace {

std::string ReadFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string Hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

std::vector<std::string> SplitTabs(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, '\t')) parts.push_back(part);
  return parts;
}

// Publishes this rank and reads every rank's record.
Status ExchangePeerInfo(StoreClient& store, const MeshOptions& o, const PeerInfo& me,
                        Deadline deadline, std::vector<PeerInfo>* peers) {
  COHORT_RETURN_IF_ERROR(store.Set("mesh/peer/" + std::to_string(o.rank),
                                   me.host_key + "\t" + me.hostname + "\t" + me.address + "\t" +
                                       std::to_string(me.pid) + "\t" +
                                       std::to_string(o.tcp_streams)));
  peers->resize(o.size);
  for (int r = 0; r < o.size; ++r) {
    Result<std::string> record = store.Get("mesh/peer/" + std::to_string(r), deadline);
    if (!record.ok()) {
      return record.status().WithContext("rank " + std::to_string(r) + " did not join the job");
    }
    std::vector<std::string> f = SplitTabs(*record);
    if (f.size() != 5) {
      return Status::Internal("malformed mesh record for rank " + std::to_string(r));
    }
    (*peers)[r] = PeerInfo{f[1], f[0], f[2], std::stoi(f[3]), 0};
    // Every rank checks, so every rank reports the same error.
    if (std::stoi(f[4]) != o.tcp_streams) {
      return Status::InvalidArgument("COHORT_TCP_STREAMS must be the same on every rank: rank " +
                                     std::to_string(r) + " uses " + f[4] + ", rank " +
                                     std::to_string(o.rank) + " uses " +
                                     std::to_string(o.tcp_streams));
    }
  }
  return Status::OK();
}

// Fills local/cross ranks from the host keys. Hosts are ordered by their
// lowest rank, so cross_rank is stable and rank 0's host is host 0.
void ComputeTopology(Mesh* mesh) {
  std::map<std::string, std::vector<int>> by_host;
  std::vector<std::string> host_order;
  for (int r = 0; r < mesh->size; ++r) {
    auto& ranks = by_host[mesh->peers[r].host_key];
    if (ranks.empty()) host_order.push_back(mesh->peers[r].host_key);
    mesh->peers[r].local_rank = static_cast<int>(ranks.size());
    ranks.push_back(r);
  }
  const std::string& mine = mesh->peers[mesh->rank].host_key;
  mesh->local_ranks = by_host[mine];
  mesh->local_rank = mesh->peers[mesh->rank].local_rank;
  mesh->local_size = static_cast<int>(mesh->local_ranks.size());
  mesh->cross_size = static_cast<int>(host_order.size());
  mesh->cross_rank =
      static_cast<int>(std::find(host_order.begin(), host_order.end(), mine) - host_order.begin());
  for (const std::string& host : host_order) mesh->hosts.push_back(by_host[host]);
}

bool UsesTcp(const Mesh& mesh, const MeshOptions& o, int peer) {
  return o.force_tcp || mesh.peers[peer].host_key != mesh.peers[mesh.rank].host_key;
}

// What a connecting rank sends after the handshake: who it is and which of
// its tcp_streams connections to the accepting rank this one is.
struct ConnectionHello {
  int32_t rank;
  int32_t stream;
};

// How long a connection to the mesh port may take to authenticate and say
// who it is; and how many may be doing so at once (the oldest is dropped).
constexpr double kMeshHandshakeSeconds = 10;
constexpr size_t kMaxArriving = 256;

bool ByTime(const Deadline& a, const Deadline& b) { return a.at() < b.at(); }

// A connection to this rank's mesh port that has yet to prove the job secret
// and say which rank and stream it is. Many are served at once, each with a
// short deadline of its own, so a stranger's silent or garbled connection
// costs the job nothing.
struct Arriving {
  Arriving(Socket socket, const MeshOptions& o, Deadline job_deadline)
      : link(std::move(socket)),
        peer(link.socket().PeerName()),
        handshake(o.secret, "mesh"),
        deadline(std::min(job_deadline.at(), Deadline::AfterSeconds(kMeshHandshakeSeconds).at())) {
    link.QueueMessage(handshake.challenge());
  }
  FramedConnection link;
  std::string peer;
  ServerHandshake handshake;
  Deadline deadline;
  bool authenticated = false;
  bool done = false;  // dropped, or handed over as a stream
};

// Moves `a` on as far as the bytes that arrived allow. Fills `*hello` and
// returns true once the peer is authenticated and has said who it is; an
// error means `a` must be dropped.
Result<bool> Advance(Arriving& a, ConnectionHello* hello) {
  Result<bool> flushed = a.link.Flush();
  if (!flushed.ok()) return flushed.status();
  std::string bytes;
  if (!a.authenticated) {
    Result<bool> reply = a.link.ReadMessage(ServerHandshake::kMaxMessage, &bytes);
    if (!reply.ok())
      return Status::Unauthenticated("no handshake reply: " + reply.status().message());
    if (!*reply) return false;
    std::string verdict;
    Status checked = a.handshake.Check(bytes, &verdict);
    a.link.QueueMessage(verdict);
    flushed = a.link.Flush();  // a refusal is sent on a best-effort basis
    COHORT_RETURN_IF_ERROR(checked);
    if (!flushed.ok()) return flushed.status();
    a.authenticated = true;
  }
  // The socket becomes a link's once the hello is in: nothing may be queued.
  if (a.link.has_output()) return false;
  Result<bool> got = a.link.ReadBytes(sizeof(ConnectionHello), &bytes);
  if (!got.ok() || !*got) return got;
  std::memcpy(hello, bytes.data(), sizeof(ConnectionHello));
  return true;
}

// Accepts the mesh connections of the higher ranks that use TCP, by rank and
// stream, until all are in or `deadline`.
Status AcceptTcpPeers(const Mesh& mesh, const MeshOptions& o, Socket& listener, Deadline deadline,
                      std::map<int, std::vector<Socket>>* accepted) {
  int expected = 0;
  for (int p = o.rank + 1; p < o.size; ++p) expected += UsesTcp(mesh, o, p) ? o.tcp_streams : 0;
  std::list<Arriving> arriving;
  auto drop = [&](Arriving& a, const std::string& why) {
    COHORT_LOG(kWarning) << "rank " << o.rank << " refused mesh connection from " << a.peer << ": "
                         << why;
    a.done = true;
  };
  std::vector<pollfd> fds;
  while (expected > 0) {
    if (deadline.Expired()) {
      return Status::Timeout("timed out waiting for " + std::to_string(expected) +
                             " peers to connect");
    }
    fds.assign(1, pollfd{listener.fd(), POLLIN, 0});
    for (Arriving& a : arriving) {
      fds.push_back(pollfd{a.link.fd(), short(POLLIN | (a.link.has_output() ? POLLOUT : 0)), 0});
    }
    Deadline next = deadline;
    for (const Arriving& a : arriving) next = std::min(next, a.deadline, ByTime);
    if (::poll(fds.data(), fds.size(), next.RemainingMs()) < 0 && errno != EINTR) {
      return Status::IoError(std::string("poll: ") + std::strerror(errno));
    }
    size_t i = 1;
    for (Arriving& a : arriving) {
      const short revents = fds[i++].revents;
      if (revents == 0 && !a.deadline.Expired()) continue;
      ConnectionHello hello{-1, -1};
      Result<bool> ready = Advance(a, &hello);
      if (!ready.ok()) {
        drop(a, ready.status().message());
        continue;
      }
      if (!*ready) {
        if (a.deadline.Expired()) drop(a, "no handshake in time");
        continue;
      }
      const int peer = hello.rank;
      std::vector<Socket>& streams = (*accepted)[peer];
      streams.resize(o.tcp_streams);
      if (peer <= o.rank || peer >= o.size || hello.stream < 0 || hello.stream >= o.tcp_streams ||
          streams[hello.stream].valid()) {
        return Status::Internal("unexpected mesh connection claiming rank " + std::to_string(peer) +
                                " stream " + std::to_string(hello.stream));
      }
      streams[hello.stream] = std::move(a.link.socket());
      a.done = true;
      --expected;
    }
    arriving.remove_if([](const Arriving& a) { return a.done; });
    if (fds[0].revents != 0) {
      for (;;) {
        Result<Socket> s = listener.Accept(Deadline(Clock::time_point()));
        if (!s.ok()) break;
        if (arriving.size() >= kMaxArriving) drop(arriving.front(), "too many connections at once");
        arriving.remove_if([](const Arriving& a) { return a.done; });
        arriving.emplace_back(std::move(s).value(), o, deadline);
        Result<bool> sent = arriving.back().link.Flush();
        if (!sent.ok()) drop(arriving.back(), sent.status().message());
      }
    }
  }
  return Status::OK();
}

Status ConnectTcpPeers(Mesh* mesh, const MeshOptions& o, Socket& listener, Deadline deadline) {
  // Connect to lower ranks; accept from higher ones. Each connection starts
  // with the job-secret handshake, then the connecting rank says who it is.
  for (int p = 0; p < o.rank; ++p) {
    if (!UsesTcp(*mesh, o, p)) continue;
    std::string host;
    int port = 0;
    COHORT_RETURN_IF_ERROR(ParseHostPort(mesh->peers[p].address, "mesh address", &host, &port));
    std::vector<Socket> streams;
    for (int32_t stream = 0; stream < o.tcp_streams; ++stream) {
      Result<Socket> s = Socket::Connect(host, port, deadline);
      if (!s.ok()) return s.status().WithContext("connecting to " + mesh->Describe(p));
      COHORT_RETURN_IF_ERROR(AuthenticateClient(*s, o.secret, "mesh", deadline)
                                 .WithContext("connecting to " + mesh->Describe(p)));
      ConnectionHello hello{o.rank, stream};
      COHORT_RETURN_IF_ERROR(s->SendAll(&hello, sizeof(hello), deadline));
      streams.push_back(std::move(s).value());
    }
    mesh->links[p] = MakeStripedTcpLink(std::move(streams));
  }
  std::map<int, std::vector<Socket>> accepted;
  COHORT_RETURN_IF_ERROR(AcceptTcpPeers(*mesh, o, listener, deadline, &accepted));
  for (auto& [peer, streams] : accepted) mesh->links[peer] = MakeStripedTcpLink(std::move(streams));
  return Status::OK();
}

int OpenPidFd(int pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// Whether every rank of this host may copy straight from and into every
// other's memory (net/cma.h). Each rank reads a value from each peer's
// address space and publishes its verdict in its control block; after a
// barrier every rank reads all verdicts, so all decide alike. One line in the
// log of the host's first rank says which path the large collectives take.
Status ProbeSingleCopy(Mesh* mesh, StoreClient& store, const std::string& host_tag,
                       Deadline deadline) {
  const HostSegmentLayout& layout = *mesh->layout;
  auto control = [&](int l) { return layout.control(mesh->segments[l].data()); };
  HostControl* mine = control(mesh->local_rank);
  int error_number = 0;
  for (int l = 0; l < mesh->local_size && error_number == 0; ++l) {
    if (l == mesh->local_rank) continue;
    HostControl* peer = control(l);
    (void)CmaProbe(peer->pid, peer->self_addr + offsetof(HostControl, cma_token), peer->cma_token,
                   &error_number);
  }
  mine->cma_errno = error_number;
  mine->cma_verdict.store(error_number == 0 ? kCmaWorks : kCmaRefused);
  COHORT_RETURN_IF_ERROR(store.Barrier("cma-probed/" + host_tag, mesh->local_size, deadline));
  mesh->single_copy = true;
  for (int l = 0; l < mesh->local_size && mesh->single_copy; ++l) {
    if (control(l)->cma_verdict.load() == kCmaWorks) continue;
    mesh->single_copy = false;
    mesh->single_copy_note = mesh->Describe(mesh->local_ranks[l]) +
                             " may not read its peers' memory (process_vm_readv: " +
                             std::strerror(control(l)->cma_errno) + ")";
  }
  if (mesh->local_rank == 0) {
    if (mesh->single_copy) {
      COHORT_LOG(kInfo) << "rank " << mesh->rank
                        << ": large collectives among the ranks of this host copy once, straight "
                           "between their memories (process_vm_readv/writev)";
    } else {
      COHORT_LOG(kWarning) << "rank " << mesh->rank
                           << ": single-copy shared memory is off: " << mesh->single_copy_note
                           << "; large collectives among the ranks of this host copy through "
                              "shared memory twice (ptrace scope or a container's seccomp "
                              "profile; COHORT_SHM_SINGLE_COPY=off silences this)";
    }
  }
  return Status::OK();
}

// Creates this rank's segment, maps the local peers' ones and links to them.
Status MapHostSegments(Mesh* mesh, StoreClient& store, const MeshOptions& o, Deadline deadline) {
  mesh->layout.emplace(mesh->local_size, o.shm_slot_bytes, o.shm_slots, o.shm_ring_bytes);
  const HostSegmentLayout& layout = *mesh->layout;
  Result<std::string> tag = store.Get("mesh/tag", deadline);
  if (!tag.ok()) return tag.status();
  auto name_of = [&](int local) {
    return "/cohort-" + *tag + "-" + std::to_string(mesh->local_ranks[local]);
  };
  mesh->segments.resize(mesh->local_size);
  Result<ShmSegment> mine = ShmSegment::Create(name_of(mesh->local_rank), layout.total_bytes());
  if (!mine.ok()) return mine.status();
  void* base = mine->data();
  layout.control(base)->pid = ::getpid();
  // For the single-copy probe (ProbeSingleCopy), before any peer looks.
  layout.control(base)->self_addr = reinterpret_cast<uintptr_t>(base);
  layout.control(base)->cma_token = std::random_device{}() * 0x100000001ull + 1;
  for (int l = 0; l < mesh->local_size; ++l)
    InitShmRing(layout.inbound_ring(base, l), o.shm_ring_bytes);
  mesh->segments[mesh->local_rank] = std::move(mine).value();

  const std::string host_tag = std::to_string(mesh->cross_rank);
  COHORT_RETURN_IF_ERROR(store.Barrier("shm-created/" + host_tag, mesh->local_size, deadline));
  for (int l = 0; l < mesh->local_size; ++l) {
    if (l == mesh->local_rank) continue;
    Result<ShmSegment> seg = ShmSegment::Open(name_of(l), layout.total_bytes());
    if (!seg.ok()) return seg.status();
    mesh->segments[l] = std::move(seg).value();
  }
  // Once everyone has mapped every segment, the names can go: nothing is left
  // behind in /dev/shm however the job ends.
  COHORT_RETURN_IF_ERROR(store.Barrier("shm-mapped/" + host_tag, mesh->local_size, deadline));
  mesh->segments[mesh->local_rank].Unlink();

  mesh->pidfds.assign(mesh->local_size, -1);
  for (int l = 0; l < mesh->local_size; ++l) {
    if (l == mesh->local_rank) continue;
    const int peer = mesh->local_ranks[l];
    mesh->pidfds[l] = OpenPidFd(mesh->peers[peer].pid);
    void* peer_base = mesh->segments[l].data();
    mesh->links[peer] = MakeShmLink(layout.inbound_ring(peer_base, mesh->local_rank),
                                    layout.inbound_ring(base, l), layout.control(peer_base));
  }
  if (!o.single_copy) {
    mesh->single_copy_note = "COHORT_SHM_SINGLE_COPY=off";
    return Status::OK();
  }
  return ProbeSingleCopy(mesh, store, host_tag, deadline);
}

}  // namespace

Result<std::vector<int>> ParseTestHosts(const std::string& text, int size) {
  std::vector<int> hosts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    size_t used = 0;
    int host = -1;
    try {
      host = std::stoi(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != part.size() || host < 0) {
      return Status::InvalidArgument("COHORT_TEST_HOSTS='" + text + "': entry " +
                                     std::to_string(hosts.size()) + " ('" + part +
                                     "') is not a host number >= 0");
    }
    hosts.push_back(host);
  }
  if (static_cast<int>(hosts.size()) != size) {
    return Status::InvalidArgument("COHORT_TEST_HOSTS='" + text + "' names the host of " +
                                   std::to_string(hosts.size()) + " ranks but the job has " +
                                   std::to_string(size) + " (one entry per rank, e.g. 0,0,1,1)");
  }
  return hosts;
}

std::string LocalHostKey() {
  struct stat st {};
  std::string netns = ::stat("/proc/self/ns/net", &st) == 0 ? std::to_string(st.st_ino) : "";
  return Hostname() + "/" + ReadFirstLine("/proc/sys/kernel/random/boot_id") + "/" + netns;
}

Result<Mesh> BuildMesh(StoreClient& store, const MeshOptions& o) {
  const Deadline deadline = Deadline::AfterSeconds(o.timeout_seconds);
  if (o.rank == 0) {
    COHORT_RETURN_IF_ERROR(store.Set("mesh/tag", GenerateSecret().substr(0, 16)));
  }
  Result<Socket> listener = Socket::Listen(o.listen_host, 0);
  if (!listener.ok()) return listener.status().WithContext("mesh listener");
  Result<int> port = listener->LocalPort();
  if (!port.ok()) return port.status();

  Mesh mesh;
  mesh.rank = o.rank;
  mesh.size = o.size;
  PeerInfo me{Hostname(), LocalHostKey(), o.listen_host + ":" + std::to_string(*port),
              static_cast<int>(::getpid()), 0};
  if (!o.test_hosts.empty()) {
    Result<std::vector<int>> hosts = ParseTestHosts(o.test_hosts, o.size);
    if (!hosts.ok()) return hosts.status();
    const std::string emulated = "/test-host-" + std::to_string((*hosts)[o.rank]);
    me.hostname += emulated;
    me.host_key += emulated;
  }
  COHORT_RETURN_IF_ERROR(ExchangePeerInfo(store, o, me, deadline, &mesh.peers));
  ComputeTopology(&mesh);
  mesh.links.resize(o.size);
  COHORT_RETURN_IF_ERROR(ConnectTcpPeers(&mesh, o, *listener, deadline));
  if (!o.force_tcp && mesh.local_size > 1) {
    COHORT_RETURN_IF_ERROR(MapHostSegments(&mesh, store, o, deadline));
  }
  return mesh;
}

}  // namespace cohort
