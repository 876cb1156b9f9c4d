// TrackingStore: where experiments, runs and their metrics live. One
// interface for every backend (SQLite, PostgreSQL) so the REST server and the
// embedded client use them alike. Every call validates its input and fails
// with a Status naming the field; a batch is written in one transaction, so a
// reader sees all of it or none.
#ifndef COHORT_TRACK_STORE_H_
#define COHORT_TRACK_STORE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "track/types.h"

namespace cohort::track {

// MLflow's limits on one log-batch request.
inline constexpr size_t kMaxBatchItems = 1000;
inline constexpr size_t kMaxBatchMetrics = 1000;
inline constexpr size_t kMaxBatchParams = 100;
inline constexpr size_t kMaxBatchTags = 100;
// MLflow's limits on names and values (bytes).
inline constexpr size_t kMaxKeyLength = 250;
inline constexpr size_t kMaxParamValueLength = 6000;
inline constexpr size_t kMaxTagValueLength = 8000;
// MLflow's limits on runs/log-inputs (bytes).
// A live client's heartbeat (docs/tracking.md, "Runs that end"): the time,
// ms since the epoch, until which its run counts as alive; and why a run
// the server ended was ended.
inline constexpr char kAliveUntilTag[] = "cohort.alive_until";
inline constexpr char kEndReasonTag[] = "cohort.end_reason";

inline constexpr size_t kMaxDatasetsPerCall = 1000;
inline constexpr size_t kMaxDatasetNameLength = 500;
inline constexpr size_t kMaxDatasetDigestLength = 36;
inline constexpr size_t kMaxDatasetSourceLength = 65535;
inline constexpr size_t kMaxDatasetSchemaLength = 1048575;
inline constexpr size_t kMaxDatasetProfileLength = 16777215;
inline constexpr size_t kMaxInputTagKeyLength = 255;
inline constexpr size_t kMaxInputTagValueLength = 500;

struct Batch {
  std::vector<Metric> metrics;
  std::vector<Param> params;
  std::vector<Tag> tags;
  // A client-chosen id; a batch whose id the store has applied is skipped,
  // so a client replaying its spool never doubles a point. "" = no id.
  std::string batch_id;
};

// How agent credentials begin (then 64 hex digits), so that one is told
// from a user's token ("cohort_" and 64 hex digits) wherever it is seen.
inline constexpr char kAgentCredentialPrefix[] = "cohort_agent_";

class TrackingStore {
 public:
  virtual ~TrackingStore() = default;

  virtual Result<std::string> CreateExperiment(const std::string& name,
                                               const std::string& artifact_location,
                                               const std::vector<Tag>& tags) = 0;
  virtual Result<Experiment> GetExperiment(const std::string& experiment_id) = 0;
  virtual Result<Experiment> GetExperimentByName(const std::string& name) = 0;
  virtual Result<Page<Experiment>> SearchExperiments(const ExperimentSearch& search) = 0;
  virtual Status RenameExperiment(const std::string& experiment_id, const std::string& name) = 0;
  virtual Status SetExperimentLifecycle(const std::string& experiment_id,
                                        const std::string& stage) = 0;
  virtual Status SetExperimentTag(const std::string& experiment_id, const Tag& tag) = 0;

  // `run_id`: the id a client made while the server was down (32 hex
  // digits, checked by the caller); "" for a new one.
  virtual Result<Run> CreateRun(const std::string& experiment_id, const std::string& user_id,
                                int64_t start_time, const std::string& run_name,
                                const std::vector<Tag>& tags, const std::string& run_id) = 0;
  virtual Result<Run> GetRun(const std::string& run_id) = 0;
  // Changes what is given; an absent field keeps its value.
  virtual Result<RunInfo> UpdateRun(const std::string& run_id,
                                    const std::optional<std::string>& status,
                                    const std::optional<int64_t>& end_time,
                                    const std::optional<std::string>& run_name) = 0;
  virtual Status SetRunLifecycle(const std::string& run_id, const std::string& stage) = 0;
  virtual Result<Page<Run>> SearchRuns(const RunSearch& search) = 0;
  // Runs whose client stopped beating (it was killed): every RUNNING run
  // whose tag kAliveUntilTag (ms since the epoch, renewed by the client's
  // heartbeat) is before `now_ms` and not before `since_ms` becomes KILLED,
  // ended at that deadline, tagged kEndReasonTag. Returns their ids. Runs
  // without the tag (clients that do not beat, such as MLflow's) are never
  // touched. (`since_ms`: a server that just started leaves the deadlines
  // that passed while it was down to the clients' next beats.)
  virtual Result<std::vector<std::string>> EndLostRuns(int64_t now_ms, int64_t since_ms) = 0;

  // Metrics, params and tags of one run in one transaction. A param already
  // logged with a different value fails the whole batch (params are immutable).
  virtual Status LogBatch(const std::string& run_id, const Batch& batch) = 0;
  virtual Status DeleteTag(const std::string& run_id, const std::string& key) = 0;
  // Datasets a run used, in one transaction. A dataset is stored once per
  // experiment by (name, digest); a run's input of a dataset it already has
  // is skipped (tags included), as MLflow does.
  virtual Status LogInputs(const std::string& run_id, const std::vector<DatasetInput>& inputs) = 0;
  virtual Result<std::vector<Metric>> GetMetricHistory(const std::string& run_id,
                                                       const std::string& key) = 0;
  // At most `max_results` points per run, chosen server-side: the first and
  // last point and each bucket's min and max, so spikes stay visible.
  virtual Result<std::vector<HistoryPoint>> GetMetricHistoryBulkInterval(
      const std::vector<std::string>& run_ids, const std::string& key, int max_results,
      std::optional<int64_t> start_step, std::optional<int64_t> end_step) = 0;

  // Users and their API tokens (`cohort server --auth`). A token is shown
  // once, when created; the store keeps only its SHA-256.
  virtual Status AddUser(const std::string& name) = 0;
  virtual Result<std::string> CreateToken(const std::string& user) = 0;
  // The user a token belongs to; NotFound for an unknown token.
  virtual Result<std::string> UserForToken(const std::string& token) = 0;
  // Per-experiment access of a user: "READ" or "EDIT" (which includes
  // reading); Permission is "" when the user has none.
  virtual Status Grant(const std::string& experiment_id, const std::string& user,
                       const std::string& level) = 0;
  virtual Result<std::string> Permission(const std::string& experiment_id,
                                         const std::string& user) = 0;
  // The experiment a run belongs to (NotFound for an unknown run).
  virtual Result<std::string> ExperimentOfRun(const std::string& run_id) = 0;
  // Run counts and last activity of these experiments, in this order (an
  // unknown id gets zeros).
  virtual Result<std::vector<ExperimentActivity>> ExperimentActivities(
      const std::vector<std::string>& experiment_ids) = 0;

  // The job queue's grants (`cohort server --auth`): per queue project, a
  // user may "READ" (see its jobs and their logs) or "SUBMIT" (which
  // includes reading); project "*" is every project. "NONE" takes a grant
  // back. QueuePermission is the higher of the project's grant and the "*"
  // one, "" when the user has neither.
  virtual Status GrantQueue(const std::string& project, const std::string& user,
                            const std::string& level) = 0;
  virtual Result<std::string> QueuePermission(const std::string& project,
                                              const std::string& user) = 0;
  // Agent credentials (`cohort agent-credential`): one secret per agent
  // name, shown once when created (the store keeps its SHA-256), valid
  // until revoked. A name that has one is AlreadyExists; revoking a name
  // without one, or an unknown secret, is NotFound.
  virtual Result<std::string> CreateAgentCredential(const std::string& agent) = 0;
  virtual Status RevokeAgentCredential(const std::string& agent) = 0;
  virtual Result<std::string> AgentForCredential(const std::string& secret) = 0;
  virtual Result<std::vector<std::string>> AgentCredentials() = 0;  // names, sorted

  // A sweep controller's journal (sweep/journal.h), keyed by the sweep's
  // experiment and its name there: appends `record` as number `seq`,
  // committed when it returns. `seq` must be the sweep's next number (0 for
  // its first record): a taken one is AlreadyExists naming the sweep (a
  // second controller, or a retried append; SweepJournal tells which), a
  // gap is refused.
  virtual Status AppendSweepRecord(const std::string& experiment_id, const std::string& sweep,
                                   int64_t seq, const std::string& record) = 0;
  // The sweep's records, seq 0 first; none for a sweep never appended to.
  virtual Result<std::vector<std::string>> SweepJournal(const std::string& experiment_id,
                                                        const std::string& sweep) = 0;

  // Pipelines' status documents (`cohort pipeline status --json`, which a
  // pipeline's controller PUTs to the server after its state changes; the
  // dashboard's DAG view reads them): one per pipeline name, replaced
  // whole. The first writer owns the name: a put by another user is
  // PermissionDenied naming the owner (without --auth every user is "").
  virtual Status PutPipelineStatus(const std::string& name, const std::string& user,
                                   const std::string& status) = 0;
  // NotFound for a name never put.
  virtual Result<PipelineStatusRecord> GetPipelineStatus(const std::string& name) = 0;
  // Every pipeline's, the latest update first.
  virtual Result<std::vector<PipelineStatusRecord>> PipelineStatuses() = 0;
};

// Opens the store a URI names: "sqlite:PATH" (PATH may start with ~/) or
// "postgresql://..." (postgres_store.h). Fails naming the URI when the
// scheme is unknown or the store cannot be opened.
Result<std::unique_ptr<TrackingStore>> OpenStore(const std::string& uri);

// The URI as messages may show it: a PostgreSQL URI's password (in its
// user info or a password= parameter) left out.
std::string RedactStoreUri(const std::string& uri);

// The default store, "sqlite:~/.cohort/tracking.db".
std::string DefaultStoreUri();

}  // namespace cohort::track

#endif  // COHORT_TRACK_STORE_H_
