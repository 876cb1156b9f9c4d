// The registry of sweep algorithms: the one place that names each, what it
// needs from the spec, and how it is built. Study::Create builds from it,
// the spec parser (spec.cc) takes its choices and messages from it, the
// tracked sweep asks it which algorithms have rungs, and a test checks
// docs/sweeps.md's list against it. A new algorithm is a row here (in
// algorithm_registry.cc) and its Make function (algorithm.h).
#ifndef COHORT_SWEEP_ALGORITHM_REGISTRY_H_
#define COHORT_SWEEP_ALGORITHM_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "sweep/algorithm.h"

namespace cohort::sweep {

struct AlgorithmEntry {
  const char* name;  // the spec's `algorithm:` (and `sampler:`)
  // A sampler: draws every trial itself, and may be the `sampler:` of the
  // algorithms that take one (can_be_sampler). nullptr for the others.
  Result<std::unique_ptr<Sampler>> (*make_sampler)(const Space& space, const StudyOptions& o);
  bool can_be_sampler;
  // The early-stopping and population algorithms: built over the spec's
  // `sampler:`. nullptr for a sampler (it runs every trial to the end).
  std::unique_ptr<Algorithm> (*make)(const Space& space, std::unique_ptr<Sampler> sampler,
                                     const StudyOptions& o, double sign);
  bool has_rungs;         // ASHA-like: budget.reduction >= 2, the dashboard's rung view
  bool needs_population;  // PBT-like: budget.concurrent >= 2
};

// Every algorithm, in the order of docs/sweeps.md.
const std::vector<AlgorithmEntry>& SweepAlgorithms();
// The row named `name`; nullptr when there is none.
const AlgorithmEntry* FindSweepAlgorithm(const std::string& name);
// "grid, random, sobol, tpe, asha, hyperband or pbt".
std::string SweepAlgorithmList();
// The samplers an algorithm with make != nullptr may use: "random, sobol or tpe".
std::string SamplerChoiceList();

}  // namespace cohort::sweep

#endif  // COHORT_SWEEP_ALGORITHM_REGISTRY_H_
