// cohort checkpoints: a training job's state, saved atomically on any
// dataset storage (a directory or s3://bucket/prefix), so a job stopped with
// SIGTERM (or killed) resumes from its last complete checkpoint.
//
//   auto store = CheckpointStore::Open("/ckpt/run1", {.keep_last = 3});
//   (*store)->Save(step, state_bytes, /*metric=*/val_loss);
//   Result<std::optional<Checkpoint>> last = (*store)->LoadLatest();
//
// A checkpoint is complete or absent: its state object is written first
// (under a name that includes its hash, so re-saving a step never overwrites
// what a manifest names), its manifest last; only a manifest makes it exist.
// After each save the store keeps the newest `keep_last` checkpoints and the
// best one by metric, and deletes the rest (and anything a killed save left,
// once its writer is gone). A checkpoint that cannot be used (a corrupt
// manifest or state) is skipped and reported (CheckpointOptions::on_warning),
// so a job with a usable checkpoint goes on.
// One process saves to a location at a time (rank 0); any number may load.
// The layout is docs/checkpoints.md.
#ifndef COHORT_CHECKPOINT_H_
#define COHORT_CHECKPOINT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"

namespace cohort {

struct CheckpointOptions {
  int keep_last = 3;  // newest checkpoints kept (at least 1)
  // The best checkpoint (by the metric given to Save) is kept as well;
  // lower is better (a loss) unless this is set.
  bool higher_is_better = false;
  // Called with each report of a checkpoint that a load, save or listing
  // skipped: its manifest cannot be read (that checkpoint is left in place,
  // never collected), or its state is missing or does not match. Unset: the
  // reports are logged as warnings on stderr.
  std::function<void(const std::string& message)> on_warning;
  // Test hook: called with "state-written" (before the manifest) and
  // "manifest-written" (before old checkpoints are deleted).
  std::function<void(std::string_view step)> on_save_step;
};

struct CheckpointInfo {
  int64_t step = 0;
  uint64_t bytes = 0;
  std::optional<double> metric;
  std::string sha256;  // of the state
};

struct Checkpoint {
  CheckpointInfo info;
  std::string state;
};

class CheckpointStore {
 public:
  // `location`: a directory (created when missing) or s3://bucket/prefix
  // (endpoint and credentials from AWS_* as for datasets).
  static Result<std::unique_ptr<CheckpointStore>> Open(const std::string& location,
                                                       CheckpointOptions options = {});
  ~CheckpointStore();

  const std::string& location() const;

  // Saves `state` as checkpoint `step` (replacing an existing one of that
  // step), then deletes what the keep rules no longer need.
  Status Save(int64_t step, std::string_view state, std::optional<double> metric = std::nullopt);
  // Complete checkpoints, oldest step first (those whose manifest cannot be
  // read are reported instead).
  Result<std::vector<CheckpointInfo>> List();
  // The checkpoint of the highest step that loads; nullopt when there is
  // none. Newer ones that do not (a manifest that cannot be read, a state
  // missing or not matching its manifest's size and SHA-256) are skipped and
  // reported. When none loads, the newest one's problem is the error.
  Result<std::optional<Checkpoint>> LoadLatest();
  // Checkpoint `step`; a problem with it is an error naming the object.
  Result<std::optional<Checkpoint>> Load(int64_t step);
  // The best checkpoint by metric (ties: the later step); nullopt when no
  // checkpoint has a metric.
  Result<std::optional<CheckpointInfo>> Best();

 private:
  struct Impl;
  explicit CheckpointStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort

#endif  // COHORT_CHECKPOINT_H_
