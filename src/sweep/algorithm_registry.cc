// The rows of the sweep algorithm registry.
#include "sweep/algorithm_registry.h"

#include "common/word_list.h"

namespace cohort::sweep {
namespace {

Result<std::unique_ptr<Sampler>> Grid(const Space& space, const StudyOptions& o) {
  return MakeGridSampler(space, o.grid_points);
}

Result<std::unique_ptr<Sampler>> Random(const Space& space, const StudyOptions& o) {
  return MakeRandomSampler(space, o.seed);
}

Result<std::unique_ptr<Sampler>> Sobol(const Space& space, const StudyOptions& o) {
  if (space.size() > SobolMaxDimensions()) {
    return Status::InvalidArgument("sobol supports at most " +
                                   std::to_string(SobolMaxDimensions()) + " parameters, got " +
                                   std::to_string(space.size()));
  }
  return MakeSobolSampler(space, o.seed);
}

Result<std::unique_ptr<Sampler>> Tpe(const Space& space, const StudyOptions& o) {
  return MakeTpeSampler(space, o.seed);
}

std::unique_ptr<Algorithm> Asha(const Space&, std::unique_ptr<Sampler> sampler,
                                const StudyOptions& o, double sign) {
  return MakeAsha(std::move(sampler), o.budget, sign);
}

std::unique_ptr<Algorithm> Hyperband(const Space&, std::unique_ptr<Sampler> sampler,
                                     const StudyOptions& o, double sign) {
  return MakeHyperband(std::move(sampler), o.budget, sign);
}

std::unique_ptr<Algorithm> Pbt(const Space& space, std::unique_ptr<Sampler> sampler,
                               const StudyOptions& o, double sign) {
  return MakePbt(space, std::move(sampler), o.budget, sign, o.seed + 1);
}

}  // namespace

const std::vector<AlgorithmEntry>& SweepAlgorithms() {
  // name, make_sampler, can_be_sampler, make, has_rungs, needs_population
  static const std::vector<AlgorithmEntry> kAlgorithms = {
      {"grid", Grid, false, nullptr, false, false},
      {"random", Random, true, nullptr, false, false},
      {"sobol", Sobol, true, nullptr, false, false},
      {"tpe", Tpe, true, nullptr, false, false},
      {"asha", nullptr, false, Asha, true, false},
      {"hyperband", nullptr, false, Hyperband, true, false},
      {"pbt", nullptr, false, Pbt, false, true},
  };
  return kAlgorithms;
}

const AlgorithmEntry* FindSweepAlgorithm(const std::string& name) {
  for (const AlgorithmEntry& e : SweepAlgorithms()) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

std::string SweepAlgorithmList() {
  std::vector<std::string> names;
  for (const AlgorithmEntry& e : SweepAlgorithms()) names.push_back(e.name);
  return JoinWithOr(names);
}

std::string SamplerChoiceList() {
  std::vector<std::string> names;
  for (const AlgorithmEntry& e : SweepAlgorithms()) {
    if (e.can_be_sampler) names.push_back(e.name);
  }
  return JoinWithOr(names);
}

}  // namespace cohort::sweep
