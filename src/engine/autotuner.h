// Autotuner: rank 0's side of COHORT_AUTOTUNE. It splits the engine's
// allreduces into training steps (a step ends when a name comes back, as
// Horovod's parameter manager counts them), scores each sample of
// `steps_per_sample` steps by its median allreduced bytes per second, feeds
// the scores to the Bayesian search (engine/bayesian_search.h) and returns
// the next values to try, then the best, which the engine broadcasts.
// Deterministic: the caller passes the time of each observation.
#ifndef COHORT_ENGINE_AUTOTUNER_H_
#define COHORT_ENGINE_AUTOTUNER_H_

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/deadline.h"
#include "engine/bayesian_search.h"
#include "engine/tuning.h"

namespace cohort {

struct AutotuneOptions {
  bool enabled = false;       // COHORT_AUTOTUNE
  std::string log_path;       // COHORT_AUTOTUNE_LOG ("{rank}": every rank writes one)
  int warmup_samples = 3;     // COHORT_AUTOTUNE_WARMUP_SAMPLES: first samples, not scored
  int steps_per_sample = 10;  // COHORT_AUTOTUNE_STEPS_PER_SAMPLE
  int max_samples = 20;       // COHORT_AUTOTUNE_MAX_SAMPLES: values tried, defaults included
  uint64_t seed = 0;          // COHORT_AUTOTUNE_SEED
};

// One measured sample, for the log.
struct AutotuneSample {
  int sample = 0;  // -1 for warm-up samples
  TuningValues values;
  double score = 0;          // median allreduced bytes per second of its steps
  double median_step_s = 0;  // median step time
};

class Autotuner {
 public:
  // `start`: the configured values, measured first.
  Autotuner(const TuningValues& start, const AutotuneOptions& options);

  // After each allreduce of the job's set: its tensor `names` and `bytes`,
  // completed at `now`. Returns the values every rank must switch to when a
  // sample ended (the last such order is final).
  std::optional<TuningOrder> Observe(const std::vector<std::string>& names, uint64_t bytes,
                                     Clock::time_point now);
  // Samples measured since the last call.
  std::vector<AutotuneSample> TakeSamples() { return std::exchange(finished_, {}); }
  bool done() const { return done_; }

  // The candidate grid around `start` (each configured value is one of them).
  static std::vector<SearchDimension> Grid(const TuningValues& start);
  static TuningValues ValuesAt(const std::vector<SearchDimension>& grid, const SearchPoint& point);

 private:
  std::optional<TuningOrder> EndSample();

  const AutotuneOptions options_;
  BayesianSearch search_;
  TuningValues current_;
  int warmups_left_;
  bool done_ = false;
  std::set<std::string> seen_;  // names allreduced in this step so far
  Clock::time_point step_start_;
  uint64_t step_bytes_ = 0;
  // The step in progress is not measured: the first one started before
  // the autotuner saw it, and the one after a change ran partly on old values.
  bool skip_step_ = true;
  std::vector<double> step_rates_, step_seconds_;  // this sample's measured steps
  std::vector<AutotuneSample> finished_;
};

}  // namespace cohort

#endif  // COHORT_ENGINE_AUTOTUNER_H_
