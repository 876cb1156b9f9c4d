// A point in time by which a wait must end. Every blocking wait in cohort
// takes one, so no wait is unbounded.
#ifndef COHORT_COMMON_DEADLINE_H_
#define COHORT_COMMON_DEADLINE_H_

#include <chrono>

namespace cohort {

using Clock = std::chrono::steady_clock;

class Deadline {
 public:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  static Deadline After(std::chrono::nanoseconds d) { return Deadline(Clock::now() + d); }
  static Deadline AfterSeconds(double s) {
    return After(std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(s)));
  }

  bool Expired() const { return Clock::now() >= at_; }
  Clock::time_point at() const { return at_; }
  // Milliseconds left, clamped to [0, INT_MAX]; for poll(2).
  int RemainingMs() const;

 private:
  Clock::time_point at_;
};

inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace cohort

#endif  // COHORT_COMMON_DEADLINE_H_
