// Deadline helpers.
#include "common/deadline.h"

#include <climits>

namespace cohort {

int Deadline::RemainingMs() const {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
  if (left <= 0) return 0;
  if (left > INT_MAX) return INT_MAX;
  return static_cast<int>(left) + 1;  // round up so a poll never ends just before the deadline
}

}  // namespace cohort
