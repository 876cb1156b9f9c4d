// The path of the running binary: how `cohort` finds itself to start
// `cohort run` (launcher, queue agent, sweep trials) and its build outputs.
#ifndef COHORT_COMMON_SELF_EXECUTABLE_H_
#define COHORT_COMMON_SELF_EXECUTABLE_H_

#include <string>

#include "cohort/status.h"

namespace cohort {

// The target of /proc/self/exe.
Result<std::string> SelfExecutable();

// This binary, to run `cohort run` with: SelfExecutable(), else "cohort"
// (found through PATH).
std::string CohortBinary();

}  // namespace cohort

#endif  // COHORT_COMMON_SELF_EXECUTABLE_H_
