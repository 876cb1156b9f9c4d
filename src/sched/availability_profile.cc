// Free slots over time as a step function (see availability_profile.h).
#include "sched/availability_profile.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace cohort::sched {

AvailabilityProfile::AvailabilityProfile(double now, int free) : now_(now) { steps_[now] = free; }

void AvailabilityProfile::Add(double at, double until, int delta) {
  at = std::max(at, now_);
  if (at >= until) return;
  // Split the steps at both ends so the change covers exactly [at, until).
  steps_.emplace(at, FreeAt(at));
  if (until < HUGE_VAL) steps_.emplace(until, FreeAt(until));
  for (auto it = steps_.find(at); it != steps_.end() && it->first < until; ++it) {
    it->second += delta;
  }
}

void AvailabilityProfile::Release(double at, int slots) { Add(at, HUGE_VAL, slots); }

void AvailabilityProfile::Hold(double start, double duration, int slots) {
  Add(start, start + duration, -slots);
}

int AvailabilityProfile::FreeAt(double at) const {
  auto it = steps_.upper_bound(std::max(at, now_));
  return std::prev(it)->second;
}

double AvailabilityProfile::EarliestStart(int slots, double duration) const {
  double candidate = now_;
  bool open = false;
  for (auto it = steps_.begin(); it != steps_.end(); ++it) {
    if (it->second < slots) {
      open = false;
      continue;
    }
    if (!open) {
      candidate = it->first;
      open = true;
    }
    auto next = std::next(it);
    double step_end = next == steps_.end() ? HUGE_VAL : next->first;
    if (step_end - candidate >= duration) return candidate;
  }
  return HUGE_VAL;
}

}  // namespace cohort::sched
