// The progress engine over links.
#include "collectives/transfers.h"

#include <poll.h>

#include <algorithm>

namespace cohort {
namespace {

// How often to check the deadline and the liveness of the peers waited for.
constexpr auto kCheckInterval = std::chrono::milliseconds(100);

}  // namespace

Transfers::Transfers(Communicator& comm, std::string during)
    : comm_(comm),
      during_(std::move(during)),
      peers_(comm.size()),
      deadline_(comm.CallDeadline()),
      next_check_(Clock::now() + kCheckInterval),
      backoff_(comm.own_control()) {}

void Transfers::PostSend(int peer, const void* data, size_t len) {
  if (len == 0) return;
  peers_[peer].sends.push_back(
      Op{static_cast<unsigned char*>(const_cast<void*>(data)), len, 0, -1});
  if (std::find(active_.begin(), active_.end(), peer) == active_.end()) active_.push_back(peer);
}

void Transfers::PostRecv(int peer, void* data, size_t len) {
  if (len == 0) return;
  peers_[peer].recvs.push_back(Op{static_cast<unsigned char*>(data), len, 0, -1});
  if (std::find(active_.begin(), active_.end(), peer) == active_.end()) active_.push_back(peer);
}

void Transfers::PostHeaderCheck(int to, int from, const CallHeader& mine,
                                const CallHeader& expected) {
  headers_.push_back(PendingHeader{mine, expected, CallHeader{}});
  PendingHeader& h = headers_.back();
  PostSend(to, &h.sent, sizeof(CallHeader));
  PostRecv(from, &h.received, sizeof(CallHeader));
  peers_[from].recvs.back().header_index = static_cast<int>(headers_.size()) - 1;
}

Status Transfers::MoveBytes(int peer, bool* moved) {
  Link* link = comm_.link(peer);
  PeerQueues& q = peers_[peer];
  while (!q.sends.empty()) {
    Op& op = q.sends.front();
    Result<size_t> n = link->TrySend(op.data + op.moved, op.len - op.moved);
    if (!n.ok()) return Fail(comm_.PeerError(peer, n.status(), during_));
    if (*n == 0) break;
    *moved = true;
    op.moved += *n;
    if (op.moved < op.len) break;
    q.sends.pop_front();
    ++q.sends_done;
  }
  while (!q.recvs.empty()) {
    Op& op = q.recvs.front();
    Result<size_t> n = link->TryRecv(op.data + op.moved, op.len - op.moved);
    if (!n.ok()) return Fail(comm_.PeerError(peer, n.status(), during_));
    if (*n == 0) break;
    *moved = true;
    op.moved += *n;
    if (op.moved < op.len) break;
    if (op.header_index >= 0) {
      const PendingHeader& h = headers_[op.header_index];
      Status same = CompareCalls(h.expected, comm_.rank(), h.received, peer);
      if (!same.ok()) return Fail(same.WithContext(during_));
    }
    q.recvs.pop_front();
    ++q.recvs_done;
  }
  return Status::OK();
}

int Transfers::FirstPendingPeer() const {
  for (int peer : active_) {
    if (!peers_[peer].sends.empty() || !peers_[peer].recvs.empty()) return peer;
  }
  return -1;
}

Status Transfers::Progress() {
  if (!comm_.failure().ok()) return comm_.failure();
  bool moved = false;
  for (int peer : active_) COHORT_RETURN_IF_ERROR(MoveBytes(peer, &moved));
  if (moved) {
    idle_spins_ = 0;
    backoff_.Reset();
    return Status::OK();
  }
  return Wait();
}

Status Transfers::Wait() {
  ++idle_spins_;
  std::vector<pollfd> fds;
  bool spin = false;
  for (int peer : active_) {
    const PeerQueues& q = peers_[peer];
    if (q.sends.empty() && q.recvs.empty()) continue;
    const Link* link = comm_.link(peer);
    const bool sending = !q.sends.empty(), receiving = !q.recvs.empty();
    if ((sending && link->send_fd() < 0) || (receiving && link->recv_fd() < 0)) {
      spin = true;
      continue;
    }
    // A striped link may send on one socket and receive on another; poll(2)
    // accepts the same descriptor twice when they coincide.
    if (sending) fds.push_back(pollfd{link->send_fd(), POLLOUT, 0});
    if (receiving) fds.push_back(pollfd{link->recv_fd(), POLLIN, 0});
  }
  if (idle_spins_ % 64 == 0 && Clock::now() >= next_check_) {
    next_check_ = Clock::now() + kCheckInterval;
    for (int peer : active_) {
      const PeerQueues& q = peers_[peer];
      if (q.sends.empty() && q.recvs.empty()) continue;
      Status alive = comm_.CheckPeerAlive(peer, during_);
      if (!alive.ok()) return Fail(alive);
    }
    if (deadline_.Expired()) return Fail(comm_.TimeoutError(FirstPendingPeer(), during_));
  }
  if (spin) {
    if (!fds.empty()) {
      // Links of both kinds: sockets cannot ring the doorbell, so poll them
      // without blocking between the shared-memory polls.
      ::poll(fds.data(), fds.size(), 0);
    }
    backoff_.Idle([&] { return AnyShmLinkCanMove(); });
    return Status::OK();
  }
  if (!fds.empty()) {
    // Sockets only: block in the kernel, waking at least every 100 ms for the checks.
    ::poll(fds.data(), fds.size(), std::min(100, deadline_.RemainingMs()));
    idle_spins_ = 63;  // the next idle round checks the deadline and liveness
  }
  return Status::OK();
}

bool Transfers::AnyShmLinkCanMove() const {
  for (int peer : active_) {
    const PeerQueues& q = peers_[peer];
    if (q.sends.empty() && q.recvs.empty()) continue;
    if (comm_.link(peer)->CanMove(!q.sends.empty(), !q.recvs.empty())) return true;
  }
  return false;
}

Status Transfers::WaitAll() {
  while (FirstPendingPeer() >= 0) COHORT_RETURN_IF_ERROR(Progress());
  return Status::OK();
}

}  // namespace cohort
