// The tracking store written once in SQL that SQLite and PostgreSQL both
// accept (ON CONFLICT upserts, RETURNING, row values, bound values only),
// over an SqlConnection. The backends add their connection, their schema
// migrations and how one process claims the store (sqlite_store.h,
// postgres_store.h). Experiments, runs, search and users are in
// sql_store.cc; batches and metric histories in sql_store_metrics.cc;
// dataset inputs in sql_store_inputs.cc; sweep journals in
// sql_store_sweeps.cc; the job queue's grants and agent credentials in
// sql_store_queue.cc; pipelines' status documents in sql_store_pipelines.cc.
#ifndef COHORT_TRACK_SQL_STORE_H_
#define COHORT_TRACK_SQL_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "track/search_filter.h"
#include "track/sql_connection.h"
#include "track/store.h"

namespace cohort::track {

// Milliseconds since the epoch: the stores' creation and update times.
int64_t NowMillis();

// A metric value as stored: NaN is stored as 0 with is_nan set (as MLflow
// does), since a primary-key column refuses NULL; and read back.
SqlValue MetricValue(double v);
double ReadMetricValue(const SqlStatement& s, int value_col, int nan_col);

// Sets a run's tag (run_uuid, key, value), replacing its value.
inline constexpr const char* kUpsertTag =
    "INSERT INTO tags VALUES (?, ?, ?) ON CONFLICT (run_uuid, key)"
    " DO UPDATE SET value = excluded.value";

class SqlStore : public TrackingStore {
 public:
  explicit SqlStore(std::unique_ptr<SqlConnection> db) : db_(std::move(db)) {}

  // Moves the schema from its stored version to migrations.size(), one
  // transaction per step; a newer schema than this build knows is refused.
  Status Migrate(const std::vector<const char*>& migrations);
  Result<std::string> CreateExperiment(const std::string& name,
                                       const std::string& artifact_location,
                                       const std::vector<Tag>& tags) override;
  Result<Experiment> GetExperiment(const std::string& experiment_id) override;
  Result<Experiment> GetExperimentByName(const std::string& name) override;
  Result<Page<Experiment>> SearchExperiments(const ExperimentSearch& search) override;
  Status RenameExperiment(const std::string& experiment_id, const std::string& name) override;
  Status SetExperimentLifecycle(const std::string& experiment_id,
                                const std::string& stage) override;
  Status SetExperimentTag(const std::string& experiment_id, const Tag& tag) override;
  Result<Run> CreateRun(const std::string& experiment_id, const std::string& user_id,
                        int64_t start_time, const std::string& run_name,
                        const std::vector<Tag>& tags, const std::string& run_id) override;
  Result<Run> GetRun(const std::string& run_id) override;
  Result<RunInfo> UpdateRun(const std::string& run_id, const std::optional<std::string>& status,
                            const std::optional<int64_t>& end_time,
                            const std::optional<std::string>& run_name) override;
  Status SetRunLifecycle(const std::string& run_id, const std::string& stage) override;
  Result<Page<Run>> SearchRuns(const RunSearch& search) override;
  Result<std::vector<std::string>> EndLostRuns(int64_t now_ms, int64_t since_ms) override;
  Status LogBatch(const std::string& run_id, const Batch& batch) override;
  Status DeleteTag(const std::string& run_id, const std::string& key) override;
  Status LogInputs(const std::string& run_id, const std::vector<DatasetInput>& inputs) override;
  Result<std::vector<Metric>> GetMetricHistory(const std::string& run_id,
                                               const std::string& key) override;
  Result<std::vector<HistoryPoint>> GetMetricHistoryBulkInterval(
      const std::vector<std::string>& run_ids, const std::string& key, int max_results,
      std::optional<int64_t> start_step, std::optional<int64_t> end_step) override;
  Status AddUser(const std::string& name) override;
  Result<std::string> CreateToken(const std::string& user) override;
  Result<std::string> UserForToken(const std::string& token) override;
  Status Grant(const std::string& experiment_id, const std::string& user,
               const std::string& level) override;
  Result<std::string> Permission(const std::string& experiment_id,
                                 const std::string& user) override;
  Result<std::string> ExperimentOfRun(const std::string& run_id) override;
  Result<std::vector<ExperimentActivity>> ExperimentActivities(
      const std::vector<std::string>& experiment_ids) override;
  Status GrantQueue(const std::string& project, const std::string& user,
                    const std::string& level) override;
  Result<std::string> QueuePermission(const std::string& project, const std::string& user) override;
  Result<std::string> CreateAgentCredential(const std::string& agent) override;
  Status RevokeAgentCredential(const std::string& agent) override;
  Result<std::string> AgentForCredential(const std::string& secret) override;
  Result<std::vector<std::string>> AgentCredentials() override;
  Status AppendSweepRecord(const std::string& experiment_id, const std::string& sweep, int64_t seq,
                           const std::string& record) override;
  Result<std::vector<std::string>> SweepJournal(const std::string& experiment_id,
                                                const std::string& sweep) override;
  Status PutPipelineStatus(const std::string& name, const std::string& user,
                           const std::string& status) override;
  Result<PipelineStatusRecord> GetPipelineStatus(const std::string& name) override;
  Result<std::vector<PipelineStatusRecord>> PipelineStatuses() override;

 private:
  struct BucketUpdate;  // sql_store_metrics.cc

  // Points of a series with steps in [first, last], in order; `limit` > 0
  // keeps that many (from the end when `from_end`).
  Result<std::vector<Metric>> ReadSeries(const std::string& run_id, const std::string& key,
                                         int64_t first, int64_t last, int64_t limit,
                                         bool from_end = false);
  // A long series as its first and last points, the raw points of the
  // buckets [first, last] cuts, and the lowest and highest point of every
  // bucket inside: what min/max downsampling needs, from ~1/500 of the rows.
  Result<std::vector<Metric>> ReadSeriesFromBuckets(const std::string& run_id,
                                                    const std::string& key, int64_t first,
                                                    int64_t last);
  // Experiment ids are integers in this store; anything else matches none.
  static SqlValue ExperimentKey(const std::string& id);
  static Status RunNotFound(const std::string& run_id);
  // First column of every row, as text.
  Result<std::vector<std::string>> QueryIds(const std::string& sql,
                                            const std::vector<SqlValue>& values);
  Status RequireExperiment(const std::string& experiment_id, bool active);
  Status RequireRun(const std::string& run_id);
  Status RequireActiveRun(const std::string& run_id);
  std::string RunCondition(const FilterClause& c, std::vector<SqlValue>* values);
  Result<Experiment> LoadExperiment(const std::string& where, const SqlValue& value,
                                    const std::string& not_found);
  // The runs with these ids, in this order, with their latest metrics,
  // params and tags (one query per table for the whole page).
  Result<std::vector<Run>> LoadRuns(const std::vector<std::string>& ids);
  // The dataset inputs of the runs in `found` (`in` = "(?,?...)" of their
  // ids, bound to `values`); sql_store_inputs.cc.
  Status LoadInputs(const std::string& in, const std::vector<SqlValue>& values,
                    std::map<std::string, Run>* found);
  // Params are immutable: the same value again is fine, a different one
  // fails the batch naming every changed key.
  Status WriteParams(const std::string& run_id, const std::vector<Param>& params);
  Status WriteMetrics(const std::string& run_id, const std::vector<Metric>& metrics);
  // Folds each bucket's new points into its metric_buckets row. SET
  // expressions see the row's old values, so each CASE compares with them.
  Status WriteBuckets(const std::string& run_id,
                      const std::map<std::pair<std::string, int64_t>, BucketUpdate>& buckets);

  std::mutex mu_;  // one connection, used by one thread at a time
  std::unique_ptr<SqlConnection> db_;
};

}  // namespace cohort::track

#endif  // COHORT_TRACK_SQL_STORE_H_
