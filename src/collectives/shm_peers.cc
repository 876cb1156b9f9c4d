// Waiting on and publishing to the ranks of one host (see shm_peers.h).
#include "collectives/shm_peers.h"

#include <string>

#include "net/shm_backoff.h"

namespace cohort {
namespace {

// While waiting (see net/shm_backoff.h), check liveness and the deadline
// every kCheckInterval.
constexpr auto kCheckInterval = std::chrono::milliseconds(100);

}  // namespace

ShmPeers::ShmPeers(Communicator& comm, const char* what)
    : comm_(comm),
      mesh_(comm.mesh()),
      layout_(*mesh_.layout),
      n_(mesh_.local_size),
      me_(mesh_.local_rank),
      what_(what),
      deadline_(comm.CallDeadline()) {}

std::atomic<uint64_t>& ShmPeers::Counter(int l, ShmCounter which) {
  HostControl* c = Control(l);
  return which == ShmCounter::kIn        ? c->in_seq
         : which == ShmCounter::kReduced ? c->red_seq
                                         : c->out_seq;
}

Status ShmPeers::CheckInterrupted() {
  if (Control(me_)->aborted.load(std::memory_order_acquire) == 0) return Status::OK();
  return comm_.Fail(Status::Interrupted(std::string(what_) + ": interrupted"));
}

Status ShmPeers::WaitForPeers(ShmCounter which, uint64_t target) {
  COHORT_RETURN_IF_ERROR(CheckInterrupted());
  for (int l = 0; l < n_; ++l) {
    if (l == me_) continue;
    std::atomic<uint64_t>& counter = Counter(l, which);
    auto reached = [&] { return counter.load(std::memory_order_acquire) >= target; };
    if (reached()) continue;
    ShmBackoff backoff(Control(me_));
    Clock::time_point next_check = Clock::now() + kCheckInterval;
    unsigned rounds = 0;
    while (!reached()) {
      backoff.Idle(reached);
      if (++rounds % 1024 == 0 && Clock::now() >= next_check) {
        COHORT_RETURN_IF_ERROR(CheckWaiting(l));
        next_check = Clock::now() + kCheckInterval;
      }
    }
  }
  return Status::OK();
}

void ShmPeers::Publish(ShmCounter which, uint64_t value) {
  Set(which, value);
  for (int l = 0; l < n_; ++l) {
    if (l != me_) RingDoorbell(Control(l));
  }
}

Status ShmPeers::CheckWaiting(int l) {
  COHORT_RETURN_IF_ERROR(CheckInterrupted());
  Status alive = comm_.CheckPeerAlive(rank_of(l), what_);
  if (!alive.ok()) return comm_.Fail(alive);
  if (deadline_.Expired()) return comm_.Fail(comm_.TimeoutError(rank_of(l), what_));
  return Status::OK();
}

Status ShmPeers::CheckHeaders(uint64_t g, const CallHeader& mine) {
  for (int l = 0; l < n_; ++l) {
    if (l == me_) continue;
    Status same = CompareCalls(mine, comm_.rank(), *Header(l, g), rank_of(l));
    if (!same.ok()) return comm_.Fail(same.WithContext(what_));
  }
  return Status::OK();
}

}  // namespace cohort
