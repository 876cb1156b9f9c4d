// ShmBackoff: how a rank waits for a peer on the same host through shared
// memory. It spins with `pause` first (the peer is usually running on another
// core and answers within microseconds), then keeps polling but yields the
// core between polls (the peer may share this core), and only after
// kYieldTime sleeps on its doorbell (net/host_segment.h).
//
// Sleeping is last because waking a sleeping rank is slow (tens of
// microseconds when its idle CPU must be woken too): if waits that short led
// to sleep, two ranks could settle into waking each other every step.
#ifndef COHORT_NET_SHM_BACKOFF_H_
#define COHORT_NET_SHM_BACKOFF_H_

#include <chrono>
#include <functional>

#include "common/deadline.h"
#include "net/host_segment.h"

namespace cohort {

class ShmBackoff {
 public:
  static constexpr auto kSpinTime = std::chrono::microseconds(20);
  static constexpr auto kYieldTime = std::chrono::milliseconds(2);
  static constexpr auto kMaxSleep = std::chrono::milliseconds(2);

  // `mine` is this rank's control block (its doorbell); may be null, then the
  // backoff never sleeps.
  explicit ShmBackoff(HostControl* mine) : mine_(mine), start_(Clock::now()) {}

  // One idle round of a wait. `ready` is re-checked just before sleeping so a
  // wake-up cannot be missed.
  void Idle(const std::function<bool()>& ready);
  // Starts the escalation over (call after progress was made).
  void Reset();

 private:
  HostControl* mine_;
  Clock::time_point start_;
  unsigned rounds_ = 0;
};

}  // namespace cohort

#endif  // COHORT_NET_SHM_BACKOFF_H_
