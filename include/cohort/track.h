// Experiment tracking from C++ (the Python `cohort.track` binds the same
// client). A TrackingRun records one run: Log() returns at once and a
// background thread sends points in batches over one kept-alive connection,
// or writes them into a local SQLite store when the URI says so. While the
// server cannot be reached, batches go to a spool file and are replayed
// later; each batch carries an id, so a replay never doubles a point. A run
// on a server beats (COHORT_TRACKING_HEARTBEAT): a process killed outright
// leaves a run the server ends as KILLED once its beats stop.
//
//   auto run = cohort::TrackingRun::Start({.project = "digits", .run_name = "lr-0.1"});
//   (*run)->Log({{"loss", 0.25}}, step);
//   (*run)->Finish();
#ifndef COHORT_TRACK_H_
#define COHORT_TRACK_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/status.h"

namespace cohort {

struct TrackingOptions {
  // "http://host:port" (a `cohort server` or any MLflow server) or
  // "sqlite:PATH" (embedded, no server). Empty: $COHORT_TRACKING_URI, else
  // $MLFLOW_TRACKING_URI (http(s)://, or sqlite:///FILE as MLflow writes a
  // SQLite store), else sqlite:~/.cohort/tracking.db.
  std::string uri;
  // The experiment; created when missing. Empty: $MLFLOW_EXPERIMENT_NAME,
  // else "Default".
  std::string project = "Default";
  // Go on with this run (MLflow's start_run(run_id)): it is RUNNING again,
  // `params` and `tags` are added to it. Empty: a new run. cohort.track.init
  // passes $MLFLOW_RUN_ID here, as MLflow's fluent API does.
  std::string run_id;
  // An unreachable server: true, the run starts in the spool (its id made
  // here; the server creates it, in `project`, when it is back, as
  // docs/tracking.md says) and Start says so once on stderr; false, Start
  // fails.
  bool spool_when_unreachable = true;
  std::string run_name;                       // empty: the store picks one
  std::map<std::string, std::string> params;  // the run's config, logged at start
  std::map<std::string, std::string> tags;
  // Where batches wait while the server is unreachable. Empty:
  // $COHORT_TRACKING_SPOOL, else ~/.cohort/spool.
  std::string spool_dir;
  int flush_interval_ms = 500;  // longest a point waits before it is sent
};

class TrackingRun {
 public:
  // Creates the run (and the experiment when missing). Fails when the store
  // cannot be opened or the server refuses; an unreachable server: see
  // TrackingOptions::spool_when_unreachable.
  static Result<std::unique_ptr<TrackingRun>> Start(const TrackingOptions& options);
  // Finish("FINISHED") unless called; Finish("FAILED") when an exception is
  // unwinding the stack through it.
  ~TrackingRun();
  TrackingRun(const TrackingRun&) = delete;
  TrackingRun& operator=(const TrackingRun&) = delete;

  const std::string& run_id() const;
  const std::string& experiment_id() const;

  // Queues one point per value at `step`, timestamped now. Never blocks on
  // the network; a bad key is reported by the next Flush or Finish.
  void Log(const std::vector<std::pair<std::string, double>>& values, int64_t step);
  void SetTag(const std::string& key, const std::string& value);
  // Queues a dataset this run reads (MLflow's runs/log-inputs): its name, a
  // digest of its version (at most 36 bytes), its source type and where it
  // lives; `context` becomes the input's mlflow.data.context tag ("train",
  // "eval"; "" for none). The same dataset twice is recorded once.
  void LogInput(const std::string& name, const std::string& digest, const std::string& source_type,
                const std::string& source, const std::string& context = "");
  // Uploads a file now, as `artifact_path` (default: its file name).
  Status LogArtifact(const std::string& local_path, const std::string& artifact_path = "");
  // Waits until every point logged so far is acknowledged or spooled; the
  // first error the server returned for a batch, if any.
  Status Flush();
  // Flush, replay the spool if the server is back, and mark the run ended
  // with `status` (FINISHED, FAILED, KILLED).
  Status Finish(const std::string& status = "FINISHED");
  // Batches now waiting in the spool (0 when everything was delivered).
  size_t SpooledBatches() const;

  class Impl;

 private:
  explicit TrackingRun(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort

#endif  // COHORT_TRACK_H_
