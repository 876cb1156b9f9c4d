// The registry of allreduce algorithms: the one place that names each. The
// collectives dispatch on it (collectives/collectives.cc), the settings
// table takes COHORT_ALLREDUCE_ALGORITHM's choices and help from it, and a
// test checks docs/configuration.md against it. It sits with the settings
// (common/) because the settings table, below the collectives, derives from
// it; the algorithms themselves live in collectives/.
#ifndef COHORT_COMMON_ALLREDUCE_ALGORITHMS_H_
#define COHORT_COMMON_ALLREDUCE_ALGORITHMS_H_

#include <string>

#include "cohort/status.h"

namespace cohort {

// Which allreduce algorithm to run; kAuto picks by size and topology.
enum class AllreduceAlgorithm { kAuto, kSharedMemory, kRing, kRecursiveDoubling, kHierarchical };

struct AllreduceAlgorithmEntry {
  AllreduceAlgorithm algorithm;
  const char* name;  // the value of COHORT_ALLREDUCE_ALGORITHM / --allreduce-algorithm
};

// Every algorithm, kAuto first. A new algorithm is a row here, a case in
// RunAllreduce (collectives/collectives.cc) and a word in docs/configuration.md.
inline constexpr AllreduceAlgorithmEntry kAllreduceAlgorithms[] = {
    {AllreduceAlgorithm::kAuto, "auto"},
    {AllreduceAlgorithm::kSharedMemory, "shm"},
    {AllreduceAlgorithm::kRing, "ring"},
    {AllreduceAlgorithm::kRecursiveDoubling, "recursive_doubling"},
    {AllreduceAlgorithm::kHierarchical, "hierarchical"},
};

const char* AllreduceAlgorithmName(AllreduceAlgorithm algorithm);
Result<AllreduceAlgorithm> ParseAllreduceAlgorithm(const std::string& name);
// "auto,shm,ring,..." (the settings table's choices) and "auto, shm, ... or
// hierarchical" (its help and error messages).
const char* AllreduceAlgorithmChoices();
const char* AllreduceAlgorithmList();

}  // namespace cohort

#endif  // COHORT_COMMON_ALLREDUCE_ALGORITHMS_H_
