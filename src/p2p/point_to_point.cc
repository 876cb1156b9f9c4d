// The point-to-point progress thread: posting, matching, moving bytes.
#include "p2p/point_to_point.h"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "net/host_segment.h"

namespace cohort {
namespace {

// Waiting escalates as in net/shm_backoff.h: spin (a peer on another core
// answers within microseconds), then yield the core, then sleep.
constexpr auto kSpinTime = std::chrono::microseconds(20);
constexpr auto kYieldTime = std::chrono::milliseconds(2);
constexpr auto kMaxSleep = std::chrono::milliseconds(1);
// How often a waiting thread checks that the peers it waits for are alive.
constexpr auto kCheckInterval = std::chrono::milliseconds(100);

bool Matches(int want_src, int64_t channel, int64_t tag, int src, const auto& envelope) {
  return (want_src == PointToPoint::kAnySource || want_src == src) && envelope.channel == channel &&
         envelope.tag == tag;
}

}  // namespace

std::string PointToPoint::Seconds(const Op& op) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", op.timeout_seconds);
  return text;
}

PointToPoint::PointToPoint(std::unique_ptr<Communicator> comm, HandleTable& handles)
    : comm_(std::move(comm)),
      handles_(handles),
      wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      sends_(comm_->size()),
      inbound_(comm_->size()),
      dead_(comm_->size()) {
  thread_ = std::thread([this] { Loop(); });
}

PointToPoint::~PointToPoint() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  Wake();
  thread_.join();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status PointToPoint::CheckPeer(int peer, const char* what) const {
  const int size = comm_->size();
  if (peer < 0 || peer >= size || peer == comm_->rank()) {
    return Status::InvalidArgument(std::string(what) + ": rank " + std::to_string(peer) +
                                   " is not a peer (job of " + std::to_string(size) +
                                   " ranks, this is rank " + std::to_string(comm_->rank()) + ")");
  }
  return dead_[peer];
}

Result<int64_t> PointToPoint::Send(int dst, int64_t channel, int64_t tag, const void* data,
                                   size_t bytes, double timeout_seconds) {
  auto op = std::make_shared<Op>();
  op->deadline = Deadline::AfterSeconds(timeout_seconds).at();
  op->timeout_seconds = timeout_seconds;
  op->peer = dst;
  op->envelope = Envelope{channel, tag, bytes};
  op->data = static_cast<unsigned char*>(const_cast<void*>(data));
  {
    std::lock_guard<std::mutex> lock(mu_);
    COHORT_RETURN_IF_ERROR(CheckPeer(dst, "send"));
    if (stopping_) return Status::InvalidArgument("send: cohort is shutting down");
    op->handle = handles_.Create(nullptr);
    sends_[dst].push_back(op);
  }
  Wake();
  return op->handle;
}

Result<int64_t> PointToPoint::Recv(int src, int64_t channel, int64_t tag, void* data, size_t bytes,
                                   int* source, double timeout_seconds) {
  auto op = std::make_shared<Op>();
  op->deadline = Deadline::AfterSeconds(timeout_seconds).at();
  op->timeout_seconds = timeout_seconds;
  op->peer = src;
  op->envelope = Envelope{channel, tag, bytes};
  op->data = static_cast<unsigned char*>(data);
  op->source = source;
  std::shared_ptr<Early> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (src != kAnySource) COHORT_RETURN_IF_ERROR(CheckPeer(src, "recv"));
    COHORT_RETURN_IF_ERROR(aborted_);
    if (stopping_) return Status::InvalidArgument("recv: cohort is shutting down");
    op->handle = handles_.Create(nullptr);
    auto early = std::find_if(early_.begin(), early_.end(), [&](const auto& e) {
      return e->claimed == nullptr && Matches(src, channel, tag, e->src, e->envelope);
    });
    if (early == early_.end()) {
      receives_.push_back(op);
    } else {
      (*early)->claimed = op;
      const bool complete =
          (*early)->got == (*early)->envelope.bytes && inbound_[(*early)->src].early != *early;
      if (complete) Deliver(*early);
    }
  }
  Wake();
  return op->handle;
}

void PointToPoint::Abort(const Status& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);  // the progress thread uses the store under it too
    if (!aborted_.ok()) return;
    aborted_ = comm_->Fail(reason);  // publishes the reason, closes the links
    for (int p = 0; p < comm_->size(); ++p) {
      if (p != comm_->rank() && dead_[p].ok()) DropPeer(p, aborted_);
    }
    for (const auto& op : receives_) Finish(op, aborted_);  // those from any source
    receives_.clear();
  }
  Wake();
}

void PointToPoint::Wake() {
  posted_.store(true);
  cv_.notify_one();
  if (HostControl* mine = comm_->own_control()) RingDoorbell(mine);
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
  }
}

void PointToPoint::Finish(const std::shared_ptr<Op>& op, const Status& status) {
  handles_.Complete(op->handle, status);
}

void PointToPoint::Deliver(std::shared_ptr<Early> early) {
  const std::shared_ptr<Op> op = early->claimed;
  early_.erase(std::remove(early_.begin(), early_.end(), early), early_.end());
  if (early->envelope.bytes != op->envelope.bytes) {
    Finish(op, Status::InvalidArgument(
                   Describe(early->src) + " sent " + std::to_string(early->envelope.bytes) +
                   " bytes (tag " + std::to_string(early->envelope.tag) +
                   ") but the receiving buffer holds " + std::to_string(op->envelope.bytes)));
    return;
  }
  if (!early->data.empty()) std::memcpy(op->data, early->data.data(), early->data.size());
  if (op->source != nullptr) *op->source = early->src;
  Finish(op, Status::OK());
}

void PointToPoint::Match(int src, Inbound& in) {
  const Envelope& e = in.envelope;
  auto it = std::find_if(receives_.begin(), receives_.end(), [&](const auto& op) {
    return Matches(op->peer, op->envelope.channel, op->envelope.tag, src, e);
  });
  std::shared_ptr<Op> op;
  if (it != receives_.end()) {
    op = *it;
    receives_.erase(it);
  }
  if (op != nullptr && op->envelope.bytes == e.bytes) {
    in.direct = op;
    return;
  }
  in.early = std::make_shared<Early>();
  in.early->src = src;
  in.early->envelope = e;
  in.early->data.resize(e.bytes);
  in.early->claimed = op;  // a receive of another size: failed once the bytes are read
  if (op == nullptr) early_.push_back(in.early);
}

bool PointToPoint::SendTo(int peer) {
  Link* link = comm_->link(peer);
  bool moved = false;
  while (!sends_[peer].empty()) {
    Op& op = *sends_[peer].front();
    const size_t head = sizeof(Envelope);
    const size_t total = head + op.envelope.bytes;
    Result<size_t> n =
        op.moved < head ? link->TrySend(reinterpret_cast<unsigned char*>(&op.envelope) + op.moved,
                                        head - op.moved)
                        : link->TrySend(op.data + (op.moved - head), total - op.moved);
    if (!n.ok()) {
      FailPeer(peer, n.status());
      return true;
    }
    if (*n == 0) break;
    moved = true;
    op.moved += *n;
    if (op.moved < total) continue;
    Finish(sends_[peer].front(), Status::OK());
    sends_[peer].pop_front();
  }
  return moved;
}

bool PointToPoint::ReceiveFrom(int peer) {
  Link* link = comm_->link(peer);
  Inbound& in = inbound_[peer];
  bool moved = false;
  for (;;) {
    if (in.envelope_got < sizeof(Envelope)) {
      Result<size_t> n =
          link->TryRecv(reinterpret_cast<unsigned char*>(&in.envelope) + in.envelope_got,
                        sizeof(Envelope) - in.envelope_got);
      if (!n.ok()) {
        FailPeer(peer, n.status());
        return true;
      }
      if (*n == 0) return moved;
      moved = true;
      in.envelope_got += *n;
      if (in.envelope_got < sizeof(Envelope)) continue;
      Match(peer, in);
    }
    size_t& got = in.direct != nullptr ? in.direct->moved : in.early->got;
    unsigned char* target = in.direct != nullptr ? in.direct->data : in.early->data.data();
    if (got < in.envelope.bytes) {
      Result<size_t> n = link->TryRecv(target + got, in.envelope.bytes - got);
      if (!n.ok()) {
        FailPeer(peer, n.status());
        return true;
      }
      if (*n == 0) return moved;
      moved = true;
      got += *n;
      if (got < in.envelope.bytes) continue;
    }
    // The message is in.
    std::shared_ptr<Op> direct = std::move(in.direct);
    std::shared_ptr<Early> early = std::move(in.early);
    in = Inbound{};
    if (direct != nullptr) {
      if (direct->source != nullptr) *direct->source = peer;
      Finish(direct, Status::OK());
    } else if (early->claimed != nullptr) {
      Deliver(early);
    }
  }
}

void PointToPoint::FailPeer(int peer, const Status& cause) {
  DropPeer(peer, comm_->PeerError(peer, cause, "point-to-point"));
}

void PointToPoint::DropPeer(int peer, const Status& status) {
  dead_[peer] = status;
  for (const auto& op : sends_[peer]) Finish(op, status);
  sends_[peer].clear();
  auto from_peer = [&](const std::shared_ptr<Op>& op) { return op->peer == peer; };
  for (const auto& op : receives_) {
    if (from_peer(op)) Finish(op, status);
  }
  receives_.erase(std::remove_if(receives_.begin(), receives_.end(), from_peer), receives_.end());
  Inbound& in = inbound_[peer];
  if (in.direct != nullptr) Finish(in.direct, status);
  if (in.early != nullptr && in.early->claimed != nullptr) Finish(in.early->claimed, status);
  early_.erase(std::remove(early_.begin(), early_.end(), in.early), early_.end());
  in = Inbound{};
}

void PointToPoint::ExpireOperations(Clock::time_point now) {
  for (int p = 0; p < comm_->size(); ++p) {
    if (!sends_[p].empty() && sends_[p].front()->deadline <= now) {
      const Op& op = *sends_[p].front();
      DropPeer(p, Status::Timeout(Describe(p) + " did not take the message with tag " +
                                  std::to_string(op.envelope.tag) + " within " + Seconds(op) +
                                  "; no more messages go to it"));
    }
    const Inbound& in = inbound_[p];
    const std::shared_ptr<Op>& reading =
        in.direct != nullptr ? in.direct : (in.early != nullptr ? in.early->claimed : nullptr);
    if (reading != nullptr && reading->deadline <= now) {
      DropPeer(p, Status::Timeout("the message with tag " + std::to_string(reading->envelope.tag) +
                                  " from " + Describe(p) + " did not arrive in full within " +
                                  Seconds(*reading)));
    }
  }
  for (auto it = receives_.begin(); it != receives_.end();) {
    const Op& op = **it;
    if (op.deadline > now) {
      ++it;
      continue;
    }
    const std::string from = op.peer == kAnySource ? "any rank" : Describe(op.peer);
    Finish(*it, Status::Timeout("no message from " + from + " with tag " +
                                std::to_string(op.envelope.tag) + " within " + Seconds(op)));
    it = receives_.erase(it);
  }
}

bool PointToPoint::HasWork() const {
  if (!receives_.empty()) return true;
  for (const auto& q : sends_) {
    if (!q.empty()) return true;
  }
  for (const Inbound& in : inbound_) {
    if (in.envelope_got > 0) return true;
  }
  return std::any_of(early_.begin(), early_.end(),
                     [](const auto& e) { return e->claimed != nullptr; });
}

bool PointToPoint::MoveBytes() {
  bool moved = false;
  for (int p = 0; p < comm_->size(); ++p) {
    if (p == comm_->rank() || !dead_[p].ok()) continue;
    moved |= SendTo(p);
    if (dead_[p].ok()) moved |= ReceiveFrom(p);
  }
  return moved;
}

void PointToPoint::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  Clock::time_point idle_since = Clock::now();
  Clock::time_point next_check = idle_since + kCheckInterval;
  std::vector<pollfd> fds;
  std::vector<char> sending(comm_->size()), live(comm_->size());
  bool any_shm = false;
  for (int p = 0; p < comm_->size(); ++p) {
    if (p != comm_->rank() && comm_->link(p)->send_fd() < 0) any_shm = true;
  }
  for (;;) {
    if (!HasWork()) {
      cv_.wait(lock, [&] { return stopping_ || HasWork(); });
      idle_since = Clock::now();
    }
    if (stopping_) break;
    posted_.store(false);
    if (MoveBytes()) {
      idle_since = Clock::now();
      continue;
    }
    const Clock::time_point now = Clock::now();
    if (now >= next_check) {
      next_check = now + kCheckInterval;
      ExpireOperations(now);
      for (int p = 0; p < comm_->size(); ++p) {
        if (p == comm_->rank() || !dead_[p].ok()) continue;
        Status alive = comm_->CheckPeerAlive(p, "point-to-point");
        if (!alive.ok()) FailPeer(p, alive);
      }
    }
    const auto waited = now - idle_since;
    if (waited < kSpinTime) {
      __builtin_ia32_pause();
      continue;
    }
    // The descriptors to sleep on: every TCP link's incoming side, the
    // outgoing side of those with messages queued, and the wake-up event.
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    for (int p = 0; p < comm_->size(); ++p) {
      sending[p] = !sends_[p].empty();
      live[p] = p != comm_->rank() && dead_[p].ok();
      if (!live[p]) continue;
      Link* link = comm_->link(p);
      if (link->recv_fd() >= 0) fds.push_back(pollfd{link->recv_fd(), POLLIN, 0});
      if (link->send_fd() >= 0 && !sends_[p].empty()) {
        fds.push_back(pollfd{link->send_fd(), POLLOUT, 0});
      }
    }
    lock.unlock();
    if (waited < kYieldTime) {
      sched_yield();
    } else {
      if (any_shm) {
        SleepOnDoorbell(
            comm_->own_control(),
            [&] {
              if (posted_.load()) return true;
              for (int p = 0; p < comm_->size(); ++p) {
                if (live[p] && comm_->link(p)->CanMove(sending[p], true)) return true;
              }
              return false;
            },
            std::chrono::duration_cast<std::chrono::microseconds>(kMaxSleep));
      }
      // With shared-memory peers too, only a look at the sockets.
      const int timeout_ms = any_shm ? 0 : static_cast<int>(kCheckInterval.count());
      if (::poll(fds.data(), fds.size(), timeout_ms) > 0 && fds[0].revents != 0) {
        uint64_t count;
        (void)!::read(wake_fd_, &count, sizeof(count));
      }
    }
    lock.lock();
  }
  // Shutting down: nothing will move these any more.
  const Status gone = Status::InvalidArgument("point-to-point: cohort shut down first");
  for (auto& q : sends_) {
    for (const auto& op : q) Finish(op, gone);
  }
  for (const auto& op : receives_) Finish(op, gone);
  for (const Inbound& in : inbound_) {
    if (in.direct != nullptr) Finish(in.direct, gone);
    if (in.early != nullptr && in.early->claimed != nullptr) Finish(in.early->claimed, gone);
  }
  for (const auto& e : early_) {
    if (e->claimed != nullptr) Finish(e->claimed, gone);
  }
}

}  // namespace cohort
