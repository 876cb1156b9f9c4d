// Hyperparameter search: a Study asks an algorithm (grid, random, TPE, ASHA,
// Hyperband, PBT) for trials and is told their results.
//
//   cohort::sweep::SpaceSpec space = ...;            // or ParseSpec(yaml) below
//   auto study = cohort::sweep::Study::Create(options);
//   while (auto trial = study->Ask()) {              // std::nullopt: nothing to run now
//     for (step...) {
//       Decision d = study->Report(trial->id, value, step);  // continue, pause or stop
//       ...
//     }
//     study->Tell(trial->id, final_value);
//   }
//
// Every algorithm is deterministic for a seed: the same sequence of calls
// gives the same trials. The sweep controller relies on that to rebuild a
// study from its journal. Not thread-safe: one caller at a time.
#ifndef COHORT_SWEEP_H_
#define COHORT_SWEEP_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cohort/status.h"

namespace cohort::sweep {

// A parameter's value: an int parameter gives int64_t, a float one double; a
// categorical gives the type its value was written with.
using Value = std::variant<int64_t, double, std::string>;
using Params = std::map<std::string, Value>;  // only the parameters that are active

std::string ValueToString(const Value& value);

struct ParamSpec {
  enum class Type { kFloat, kInt, kCategorical };
  std::string name;
  Type type = Type::kFloat;
  double low = 0, high = 1;   // kFloat, kInt: inclusive bounds
  bool log = false;           // sample log(value) uniformly
  std::vector<Value> values;  // kCategorical
  // Active only when every named parameter is active and has one of the
  // listed values (compared as ValueToString).
  std::map<std::string, std::vector<std::string>> when;
};

// Parameters in any order; a `when:` may name a parameter declared after it
// (the study orders them parents first). Cycles are an error.
struct SpaceSpec {
  std::vector<ParamSpec> params;
};

struct Budget {
  int64_t trials = 100;  // trials the study starts at most (PBT: members incl. replacements)
  int concurrent = 1;    // trials running at once (PBT: the population)
  std::string resource = "epoch";
  int64_t min_resource = 1;  // ASHA/Hyperband: first rung; PBT: steps between exploits
  int64_t max_resource = 1;  // last rung (a trial that reaches it is done)
  int64_t reduction = 3;     // eta: 1 in `reduction` is promoted at each rung
};

struct StudyOptions {
  SpaceSpec space;
  std::string algorithm = "random";  // grid | random | sobol | tpe | asha | hyperband | pbt
  bool maximize = false;
  uint64_t seed = 0;
  Budget budget;
  // random: draw quasi-random Sobol points instead of pseudo-random ones;
  // asha/hyperband: how new trials are sampled ("random" or "tpe").
  bool sobol = false;
  std::string sampler = "random";
  int grid_points = 5;  // grid: values per float parameter (ints: every integer up to this many)
};

enum class Decision { kContinue, kPause, kStop };
const char* DecisionName(Decision decision);

struct Trial {
  int64_t id = 0;
  Params params;
  // Train until this much resource has been used (ASHA rung, or max_resource).
  int64_t resource = 0;
  bool resumed = false;  // a paused trial promoted: continue from its own checkpoint
  // PBT: start from this trial's checkpoint (at step `start_step`) instead of from scratch.
  std::optional<int64_t> clone_of;
  int64_t start_step = 0;
};

enum class TrialState { kRunning, kPaused, kCompleted, kStopped, kFailed };
const char* TrialStateName(TrialState state);

struct TrialRecord {
  Trial trial;
  TrialState state = TrialState::kRunning;
  std::optional<double> value;  // final value (kCompleted) or last reported one
  int64_t last_step = -1;
  std::string error;  // kFailed
};

class Study {
 public:
  // Errors: an unknown algorithm, an empty or invalid space, a bad budget.
  static Result<std::unique_ptr<Study>> Create(const StudyOptions& options);
  virtual ~Study() = default;

  // The next trial to run: a new one, or a paused one resumed. std::nullopt
  // when nothing can start now (budget spent, or waiting for results).
  virtual std::optional<Trial> Ask() = 0;
  // An intermediate result after `step` units of resource.
  virtual Result<Decision> Report(int64_t trial_id, double value, int64_t step) = 0;
  // The trial's final result.
  virtual Status Tell(int64_t trial_id, double value) = 0;
  virtual Status Fail(int64_t trial_id, const std::string& error) = 0;
  // Raises the number of trials the study may start by `more`.
  virtual void AddTrials(int64_t more) = 0;

  // Whether no trial is running and none will ever be asked for.
  virtual bool Finished() const = 0;
  virtual const std::vector<TrialRecord>& Trials() const = 0;
  // The completed trial with the best value, if any.
  virtual std::optional<TrialRecord> Best() const = 0;
};

// Parses a sweep spec (docs/sweeps.md). Errors name the line and key.
struct SweepSpec {
  std::string name;
  std::vector<std::string> command;
  int workers = 1;
  std::string metric;
  std::string metric_where;  // "FILE:LINE: metric.name", for errors about the metric
  StudyOptions study;
};
Result<SweepSpec> ParseSpec(const std::string& yaml_text, const std::string& origin);
Result<SweepSpec> LoadSpec(const std::string& path);

}  // namespace cohort::sweep

#endif  // COHORT_SWEEP_H_
