// Names of priority classes (see job.h).
#include "sched/job.h"

namespace cohort::sched {

const char* PriorityName(PriorityClass priority) {
  switch (priority) {
    case PriorityClass::kLow:
      return "low";
    case PriorityClass::kNormal:
      return "normal";
    case PriorityClass::kHigh:
      return "high";
  }
  return "unknown";
}

Result<PriorityClass> ParsePriority(std::string_view text) {
  if (text == "low") return PriorityClass::kLow;
  if (text == "normal") return PriorityClass::kNormal;
  if (text == "high") return PriorityClass::kHigh;
  return Status::InvalidArgument("unknown priority '" + std::string(text) +
                                 "' (expected high, normal or low)");
}

}  // namespace cohort::sched
