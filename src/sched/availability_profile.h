// Free slots over time, as a step function: what the estimated starts of
// waiting jobs are computed on (counts only, not hosts: an estimate).
#ifndef COHORT_SCHED_AVAILABILITY_PROFILE_H_
#define COHORT_SCHED_AVAILABILITY_PROFILE_H_

#include <map>

namespace cohort::sched {

class AvailabilityProfile {
 public:
  // `free` slots from `now` on.
  AvailabilityProfile(double now, int free);

  // `slots` more slots free from `at` on (a running job's expected end).
  void Release(double at, int slots);
  // The earliest time >= now from which `slots` slots stay free for `duration`.
  double EarliestStart(int slots, double duration) const;
  // `slots` fewer free slots during [start, start + duration).
  void Hold(double start, double duration, int slots);
  // Free slots at time `at`.
  int FreeAt(double at) const;

 private:
  // Adds `delta` to every step from `at` on (up to `until`, exclusive).
  void Add(double at, double until, int delta);

  double now_;
  std::map<double, int> steps_;  // time -> free slots from then until the next key
};

}  // namespace cohort::sched

#endif  // COHORT_SCHED_AVAILABILITY_PROFILE_H_
