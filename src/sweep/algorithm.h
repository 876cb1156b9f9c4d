// The one interface every search algorithm implements, and the samplers that
// propose new parameter values. A Study (study.cc) owns the trial records and
// calls these; values reaching an algorithm are losses (lower is better: the
// study negates them when the metric is maximized).
#ifndef COHORT_SWEEP_ALGORITHM_H_
#define COHORT_SWEEP_ALGORITHM_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "cohort/sweep.h"
#include "sweep/space.h"

namespace cohort::sweep {

// A trial as the algorithms see it: the record plus its loss.
struct Observation {
  const Params* params;
  double loss;
};

// Proposes parameter values for new trials.
class Sampler {
 public:
  virtual ~Sampler() = default;
  // `done`: the completed trials so far. std::nullopt when the sampler has
  // nothing left (a grid that is covered).
  virtual std::optional<Params> Sample(const std::vector<Observation>& done) = 0;
};

std::unique_ptr<Sampler> MakeRandomSampler(const Space& space, uint64_t seed);
std::unique_ptr<Sampler> MakeSobolSampler(const Space& space, uint64_t seed);
size_t SobolMaxDimensions();  // parameters a Sobol sampler supports
std::unique_ptr<Sampler> MakeTpeSampler(const Space& space, uint64_t seed);
Result<std::unique_ptr<Sampler>> MakeGridSampler(const Space& space, int points_per_float);

// Decides which trial runs next and what happens at each report.
class Algorithm {
 public:
  virtual ~Algorithm() = default;
  // A new trial (id `next_id`) or a paused one to resume; std::nullopt when
  // nothing can start now.
  virtual std::optional<Trial> Next(std::vector<TrialRecord>& trials, int64_t next_id) = 0;
  // Whether Next could return a trial now (does not change any state).
  virtual bool CanStart(const std::vector<TrialRecord>& trials) const = 0;
  // `record` may be updated (its resource target). kStop at the end of the
  // resource makes the trial complete; before it, stopped.
  virtual Decision OnReport(std::vector<TrialRecord>& trials, TrialRecord& record, double loss,
                            int64_t step) = 0;
  // The trial completed (Tell) or failed.
  virtual void OnFinished(const TrialRecord& record) { (void)record; }
  // The study may start `more` trials beyond its budget.
  virtual void AddTrials(int64_t more) = 0;
};

// Every trial runs to the end; new values from the sampler.
std::unique_ptr<Algorithm> MakeSamplerAlgorithm(std::unique_ptr<Sampler> sampler,
                                                const Budget& budget, double sign);

std::unique_ptr<Algorithm> MakeAsha(std::unique_ptr<Sampler> sampler, const Budget& budget,
                                    double sign);
std::unique_ptr<Algorithm> MakeHyperband(std::unique_ptr<Sampler> sampler, const Budget& budget,
                                         double sign);
std::unique_ptr<Algorithm> MakePbt(const Space& space, std::unique_ptr<Sampler> sampler,
                                   const Budget& budget, double sign, uint64_t seed);

// The completed trials as observations (loss = sign * value).
std::vector<Observation> CompletedObservations(const std::vector<TrialRecord>& trials, double sign);

// Uniform double in [0, 1) from a generator, the same on every platform.
inline double Uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace cohort::sweep

#endif  // COHORT_SWEEP_ALGORITHM_H_
