// Spin, then yield, then sleep.
#include "net/shm_backoff.h"

#include <sched.h>

namespace cohort {

void ShmBackoff::Reset() {
  start_ = Clock::now();
  rounds_ = 0;
}

void ShmBackoff::Idle(const std::function<bool()>& ready) {
  // Reading the clock costs more than a pause, so only every 64 rounds.
  if (++rounds_ % 64 != 0) {
    __builtin_ia32_pause();
    return;
  }
  const auto waited = Clock::now() - start_;
  if (waited < kSpinTime) return;
  if (waited < kYieldTime || mine_ == nullptr) {
    sched_yield();
    return;
  }
  SleepOnDoorbell(mine_, ready, kMaxSleep);
}

}  // namespace cohort
