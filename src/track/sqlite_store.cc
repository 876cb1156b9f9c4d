// The SQLite tracking store: schema and migrations, experiments, runs,
// batches in one transaction, run search and metric histories.
#include "track/sqlite_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <tuple>

#include "data/hash.h"
#include "net/auth.h"
#include "track/downsample.h"
#include "track/errors.h"
#include "track/page_token.h"
#include "track/search_filter.h"
#include "track/sqlite_db.h"
#include "track/validation.h"

namespace cohort::track {
namespace {

// Each entry moves the schema one version up; never edit a released entry,
// append a new one.
const char* const kMigrations[] = {
    // 1: experiments, runs and what runs log.
    "CREATE TABLE experiments (experiment_id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  name TEXT NOT NULL UNIQUE, artifact_location TEXT NOT NULL,"
    "  lifecycle_stage TEXT NOT NULL, creation_time INTEGER NOT NULL,"
    "  last_update_time INTEGER NOT NULL);"
    "CREATE TABLE experiment_tags (experiment_id INTEGER NOT NULL REFERENCES experiments,"
    "  key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (experiment_id, key));"
    "CREATE TABLE runs (run_uuid TEXT PRIMARY KEY, experiment_id INTEGER NOT NULL"
    "  REFERENCES experiments, name TEXT NOT NULL, user_id TEXT NOT NULL,"
    "  status TEXT NOT NULL, start_time INTEGER NOT NULL, end_time INTEGER,"
    "  lifecycle_stage TEXT NOT NULL, artifact_uri TEXT NOT NULL);"
    "CREATE INDEX runs_by_experiment ON runs (experiment_id, start_time);"
    // One B-tree ordered for histories; the whole point is the key, so the
    // same point logged twice is stored once (as in MLflow).
    "CREATE TABLE metrics (run_uuid TEXT NOT NULL REFERENCES runs, key TEXT NOT NULL,"
    "  step INTEGER NOT NULL, timestamp INTEGER NOT NULL, value REAL NOT NULL, is_nan INTEGER NOT "
    "NULL,"
    "  PRIMARY KEY (run_uuid, key, step, timestamp, value, is_nan)) WITHOUT ROWID;"
    "CREATE TABLE latest_metrics (run_uuid TEXT NOT NULL REFERENCES runs, key TEXT NOT NULL,"
    "  step INTEGER NOT NULL, timestamp INTEGER NOT NULL, value REAL, is_nan INTEGER NOT NULL,"
    "  PRIMARY KEY (run_uuid, key)) WITHOUT ROWID;"
    "CREATE INDEX latest_metrics_by_key ON latest_metrics (key, value);"
    "CREATE TABLE params (run_uuid TEXT NOT NULL REFERENCES runs, key TEXT NOT NULL,"
    "  value TEXT NOT NULL, PRIMARY KEY (run_uuid, key)) WITHOUT ROWID;"
    "CREATE INDEX params_by_key ON params (key, value);"
    "CREATE TABLE tags (run_uuid TEXT NOT NULL REFERENCES runs, key TEXT NOT NULL,"
    "  value TEXT NOT NULL, PRIMARY KEY (run_uuid, key)) WITHOUT ROWID;"
    "INSERT INTO experiments VALUES (0, 'Default', 'mlflow-artifacts:/0', 'active',"
    "  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),"
    "  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));",
    // 2: ids of applied batches, so a replayed client spool is not doubled.
    "CREATE TABLE applied_batches (batch_id TEXT PRIMARY KEY, run_uuid TEXT NOT NULL)"
    "  WITHOUT ROWID;",
    // 3: per 1024 steps of a series, its count and its lowest and highest
    // point, so a long history is downsampled from ~1/1000 of its rows.
    "CREATE TABLE metric_buckets (run_uuid TEXT NOT NULL, key TEXT NOT NULL,"
    "  bucket INTEGER NOT NULL, count INTEGER NOT NULL,"
    "  min_step INTEGER, min_timestamp INTEGER, min_value REAL,"
    "  max_step INTEGER, max_timestamp INTEGER, max_value REAL,"
    "  PRIMARY KEY (run_uuid, key, bucket)) WITHOUT ROWID;"
    "INSERT INTO metric_buckets SELECT run_uuid, key, step >> 10, count(*),"
    "  NULL, NULL, NULL, NULL, NULL, NULL FROM metrics GROUP BY run_uuid, key, step >> 10;"
    "UPDATE metric_buckets SET (min_step, min_timestamp, min_value) = (SELECT step, timestamp,"
    "  value FROM metrics m WHERE m.run_uuid = metric_buckets.run_uuid AND m.key ="
    "  metric_buckets.key AND m.step BETWEEN bucket << 10 AND (bucket << 10) + 1023 AND"
    "  m.is_nan = 0 ORDER BY value ASC LIMIT 1), (max_step, max_timestamp, max_value) ="
    "  (SELECT step, timestamp, value FROM metrics m WHERE m.run_uuid = metric_buckets.run_uuid"
    "  AND m.key = metric_buckets.key AND m.step BETWEEN bucket << 10 AND (bucket << 10) + 1023"
    "  AND m.is_nan = 0 ORDER BY value DESC LIMIT 1);",
    // 4: users and API tokens (SHA-256 of the token only).
    "CREATE TABLE users (name TEXT PRIMARY KEY, creation_time INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE tokens (token_sha256 TEXT PRIMARY KEY, user TEXT NOT NULL REFERENCES users,"
    "  creation_time INTEGER NOT NULL) WITHOUT ROWID;",
    // 5: who may read or edit which experiment.
    "CREATE TABLE experiment_permissions (experiment_id INTEGER NOT NULL REFERENCES experiments,"
    "  user TEXT NOT NULL REFERENCES users, level TEXT NOT NULL,"
    "  PRIMARY KEY (experiment_id, user)) WITHOUT ROWID;",
};
// Steps per metric_buckets row (as a shift), and the series length from
// which histories are downsampled from buckets instead of rows.
constexpr int kBucketShift = 10;
constexpr int64_t kRowsDownsampleLimit = 100000;
constexpr int kSchemaVersion = static_cast<int>(sizeof(kMigrations) / sizeof(kMigrations[0]));

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string ExpandHome(const std::string& path) {
  if (path.rfind("~/", 0) != 0) return path;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + path.substr(1);
}

// SQLite would store a NaN as NULL, which a primary-key column refuses: a
// NaN is stored as 0 with is_nan set (as MLflow does).
SqlValue MetricValue(double v) { return std::isnan(v) ? SqlValue(0.0) : SqlValue(v); }
double ReadMetricValue(const SqliteStatement& s, int value_col, int nan_col) {
  return s.Int(nan_col) ? std::nan("") : s.Double(value_col);
}

const char* RunColumn(const std::string& attribute) {
  if (attribute == "run_id") return "r.run_uuid";
  if (attribute == "run_name") return "r.name";
  if (attribute == "status") return "r.status";
  if (attribute == "user_id") return "r.user_id";
  if (attribute == "artifact_uri") return "r.artifact_uri";
  if (attribute == "lifecycle_stage") return "r.lifecycle_stage";
  if (attribute == "start_time") return "r.start_time";
  return "r.end_time";
}

const char* ExperimentColumn(const std::string& attribute) {
  if (attribute == "name") return "e.name";
  if (attribute == "experiment_id") return "e.experiment_id";
  if (attribute == "creation_time") return "e.creation_time";
  return "e.last_update_time";
}

std::string SqlComparator(const std::string& comparator) {
  return comparator == "ILIKE" ? "LIKE" : comparator;
}

// "<column> <op> ?" with the value bound; ILIKE compares lower-cased.
std::string Comparison(const std::string& column, const FilterClause& c,
                       std::vector<SqlValue>* values) {
  if (c.comparator == "IN" || c.comparator == "NOT IN") {
    std::string sql = column + " " + c.comparator + " (";
    for (size_t i = 0; i < c.list.size(); ++i) {
      sql += i ? ",?" : "?";
      values->push_back(c.list[i]);
    }
    return sql + ")";
  }
  if (c.numeric) {
    values->push_back(c.number);
  } else {
    values->push_back(c.text);
  }
  if (c.comparator == "ILIKE") return "lower(" + column + ") LIKE lower(?)";
  return column + " " + SqlComparator(c.comparator) + " ?";
}

std::string LifecycleCondition(const char* column, ViewType view) {
  if (view == ViewType::kActiveOnly) return std::string(column) + " = 'active'";
  if (view == ViewType::kDeletedOnly) return std::string(column) + " = 'deleted'";
  return "1";
}

// The points a batch adds to one metric_buckets row.
struct BucketUpdate {
  int64_t count = 0;
  const Metric* min = nullptr;  // NaN points count but are never min or max
  const Metric* max = nullptr;
  void Add(const Metric& m) {
    ++count;
    if (std::isnan(m.value)) return;
    if (min == nullptr || m.value < min->value) min = &m;
    if (max == nullptr || m.value > max->value) max = &m;
  }
};

class SqliteStore : public TrackingStore {
 public:
  SqliteStore(std::unique_ptr<SqliteDb> db, int lock_fd) : db_(std::move(db)), lock_fd_(lock_fd) {}
  ~SqliteStore() override {
    db_.reset();
    close(lock_fd_);  // releases the flock
  }

  Status Migrate() {
    auto stmt = db_->Prepare("PRAGMA user_version");
    if (!stmt.ok()) return stmt.status();
    auto row = (*stmt)->Step();
    if (!row.ok()) return row.status();
    int version = static_cast<int>((*stmt)->Int(0));
    stmt->reset();
    if (version > kSchemaVersion) {
      return Status::InvalidArgument("tracking store " + db_->path() + " has schema version " +
                                     std::to_string(version) + ", newer than this cohort's " +
                                     std::to_string(kSchemaVersion) + ": upgrade cohort");
    }
    for (; version < kSchemaVersion; ++version) {
      SqliteTransaction tx(db_.get());
      COHORT_RETURN_IF_ERROR(tx.Begin());
      COHORT_RETURN_IF_ERROR(db_->Exec(kMigrations[version]));
      COHORT_RETURN_IF_ERROR(db_->Exec("PRAGMA user_version = " + std::to_string(version + 1)));
      COHORT_RETURN_IF_ERROR(tx.Commit());
    }
    return Status::OK();
  }

  Result<std::string> CreateExperiment(const std::string& name,
                                       const std::string& artifact_location,
                                       const std::vector<Tag>& tags) override {
    COHORT_RETURN_IF_ERROR(ValidateExperimentName(name));
    for (size_t i = 0; i < tags.size(); ++i) {
      COHORT_RETURN_IF_ERROR(ValidateKey("tags[" + std::to_string(i) + "].key", tags[i].key));
    }
    std::lock_guard<std::mutex> lock(mu_);
    SqliteTransaction tx(db_.get());
    COHORT_RETURN_IF_ERROR(tx.Begin());
    int64_t now = NowMillis();
    Status s = db_->Run(
        "INSERT INTO experiments (name, artifact_location, lifecycle_stage, creation_time,"
        " last_update_time) VALUES (?, ?, 'active', ?, ?)",
        {name, artifact_location, now, now});
    if (KindOf(s) == ErrorKind::kAlreadyExists) {
      return AlreadyExistsError("Experiment(name=" + name + ") already exists.");
    }
    COHORT_RETURN_IF_ERROR(s);
    auto id = LastId();
    if (!id.ok()) return id.status();
    std::string experiment_id = std::to_string(*id);
    if (artifact_location.empty()) {
      COHORT_RETURN_IF_ERROR(
          db_->Run("UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?",
                   {"mlflow-artifacts:/" + experiment_id, *id}));
    }
    for (const Tag& t : tags) {
      COHORT_RETURN_IF_ERROR(db_->Run("INSERT OR REPLACE INTO experiment_tags VALUES (?, ?, ?)",
                                      {*id, t.key, t.value}));
    }
    COHORT_RETURN_IF_ERROR(tx.Commit());
    return experiment_id;
  }

  Result<Experiment> GetExperiment(const std::string& experiment_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    return LoadExperiment("e.experiment_id = ?", ExperimentKey(experiment_id),
                          "No Experiment with id=" + experiment_id + " exists");
  }

  Result<Experiment> GetExperimentByName(const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    return LoadExperiment("e.name = ?", name, "Could not find experiment with name '" + name + "'");
  }

  Result<Page<Experiment>> SearchExperiments(const ExperimentSearch& search) override {
    auto clauses = ParseExperimentFilter(search.filter);
    if (!clauses.ok()) return clauses.status();
    auto offset = DecodePageToken(search.page_token);
    if (!offset.ok()) return offset.status();
    std::vector<SqlValue> values;
    std::string where = LifecycleCondition("e.lifecycle_stage", search.view);
    for (const FilterClause& c : *clauses) {
      if (c.entity == Entity::kTag) {
        values.push_back(c.key);
        where +=
            " AND EXISTS (SELECT 1 FROM experiment_tags t WHERE t.experiment_id ="
            " e.experiment_id AND t.key = ? AND " +
            Comparison("t.value", c, &values) + ")";
      } else {
        where += " AND " + Comparison(ExperimentColumn(c.key), c, &values);
      }
    }
    std::string order;
    for (const std::string& text : search.order_by) {
      auto o = ParseExperimentOrderBy(text);
      if (!o.ok()) return o.status();
      if (o->entity != Entity::kAttribute) {
        return Status::InvalidArgument("Invalid order_by clause '" + text +
                                       "': experiments order by attributes only");
      }
      order += std::string(ExperimentColumn(o->key)) + (o->ascending ? " ASC, " : " DESC, ");
    }
    order += "e.experiment_id DESC";
    values.push_back(int64_t{search.max_results} + 1);
    values.push_back(*offset);
    std::lock_guard<std::mutex> lock(mu_);
    auto ids = QueryIds("SELECT e.experiment_id FROM experiments e WHERE " + where + " ORDER BY " +
                            order + " LIMIT ? OFFSET ?",
                        values);
    if (!ids.ok()) return ids.status();
    Page<Experiment> page;
    for (size_t i = 0; i < ids->size() && i < static_cast<size_t>(search.max_results); ++i) {
      auto e = LoadExperiment("e.experiment_id = ?", std::stoll((*ids)[i]), "experiment vanished");
      if (!e.ok()) return e.status();
      page.items.push_back(std::move(*e));
    }
    if (ids->size() > static_cast<size_t>(search.max_results)) {
      page.next_page_token = EncodePageToken(*offset + search.max_results);
    }
    return page;
  }

  Status RenameExperiment(const std::string& experiment_id, const std::string& name) override {
    COHORT_RETURN_IF_ERROR(ValidateExperimentName(name));
    std::lock_guard<std::mutex> lock(mu_);
    COHORT_RETURN_IF_ERROR(RequireExperiment(experiment_id, /*active=*/true));
    Status s =
        db_->Run("UPDATE experiments SET name = ?, last_update_time = ? WHERE experiment_id = ?",
                 {name, NowMillis(), ExperimentKey(experiment_id)});
    if (KindOf(s) == ErrorKind::kAlreadyExists) {
      return AlreadyExistsError("Experiment(name=" + name + ") already exists.");
    }
    return s;
  }

  Status SetExperimentLifecycle(const std::string& experiment_id,
                                const std::string& stage) override {
    std::lock_guard<std::mutex> lock(mu_);
    COHORT_RETURN_IF_ERROR(RequireExperiment(experiment_id, /*active=*/false));
    SqliteTransaction tx(db_.get());
    COHORT_RETURN_IF_ERROR(tx.Begin());
    SqlValue id = ExperimentKey(experiment_id);
    COHORT_RETURN_IF_ERROR(db_->Run(
        "UPDATE experiments SET lifecycle_stage = ?, last_update_time = ? WHERE experiment_id = ?",
        {stage, NowMillis(), id}));
    // MLflow deletes and restores an experiment's runs with it.
    COHORT_RETURN_IF_ERROR(
        db_->Run("UPDATE runs SET lifecycle_stage = ? WHERE experiment_id = ?", {stage, id}));
    return tx.Commit();
  }

  Status SetExperimentTag(const std::string& experiment_id, const Tag& tag) override {
    COHORT_RETURN_IF_ERROR(ValidateKey("key", tag.key));
    std::lock_guard<std::mutex> lock(mu_);
    COHORT_RETURN_IF_ERROR(RequireExperiment(experiment_id, /*active=*/true));
    return db_->Run("INSERT OR REPLACE INTO experiment_tags VALUES (?, ?, ?)",
                    {ExperimentKey(experiment_id), tag.key, tag.value});
  }

  Result<Run> CreateRun(const std::string& experiment_id, const std::string& user_id,
                        int64_t start_time, const std::string& run_name,
                        const std::vector<Tag>& tags) override {
    for (size_t i = 0; i < tags.size(); ++i) {
      COHORT_RETURN_IF_ERROR(ValidateKey("tags[" + std::to_string(i) + "].key", tags[i].key));
    }
    std::string name = run_name;
    for (const Tag& t : tags) {
      if (t.key == "mlflow.runName" && name.empty()) name = t.value;
    }
    std::string run_id = GenerateSecret().substr(0, 32);
    if (name.empty()) name = "run-" + run_id.substr(0, 8);
    {
      std::lock_guard<std::mutex> lock(mu_);
      COHORT_RETURN_IF_ERROR(RequireExperiment(experiment_id, /*active=*/true));
      auto location = QueryIds("SELECT artifact_location FROM experiments WHERE experiment_id = ?",
                               {ExperimentKey(experiment_id)});
      if (!location.ok()) return location.status();
      SqliteTransaction tx(db_.get());
      COHORT_RETURN_IF_ERROR(tx.Begin());
      COHORT_RETURN_IF_ERROR(
          db_->Run("INSERT INTO runs VALUES (?, ?, ?, ?, 'RUNNING', ?, NULL, 'active', ?)",
                   {run_id, ExperimentKey(experiment_id), name, user_id,
                    start_time ? start_time : NowMillis(),
                    location->front() + "/" + run_id + "/artifacts"}));
      bool has_name_tag = false;
      for (const Tag& t : tags) {
        has_name_tag |= t.key == "mlflow.runName";
        COHORT_RETURN_IF_ERROR(
            db_->Run("INSERT OR REPLACE INTO tags VALUES (?, ?, ?)", {run_id, t.key, t.value}));
      }
      if (!has_name_tag) {
        COHORT_RETURN_IF_ERROR(
            db_->Run("INSERT INTO tags VALUES (?, 'mlflow.runName', ?)", {run_id, name}));
      }
      COHORT_RETURN_IF_ERROR(tx.Commit());
    }
    return GetRun(run_id);
  }

  Result<Run> GetRun(const std::string& run_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto runs = LoadRuns({run_id});
    if (!runs.ok()) return runs.status();
    if (runs->empty()) return RunNotFound(run_id);
    return std::move(runs->front());
  }

  Result<RunInfo> UpdateRun(const std::string& run_id, const std::optional<std::string>& status,
                            const std::optional<int64_t>& end_time,
                            const std::optional<std::string>& run_name) override {
    if (status) COHORT_RETURN_IF_ERROR(ValidateRunStatus(*status));
    {
      std::lock_guard<std::mutex> lock(mu_);
      COHORT_RETURN_IF_ERROR(RequireActiveRun(run_id));
      SqliteTransaction tx(db_.get());
      COHORT_RETURN_IF_ERROR(tx.Begin());
      if (status) {
        COHORT_RETURN_IF_ERROR(
            db_->Run("UPDATE runs SET status = ? WHERE run_uuid = ?", {*status, run_id}));
      }
      if (end_time) {
        COHORT_RETURN_IF_ERROR(
            db_->Run("UPDATE runs SET end_time = ? WHERE run_uuid = ?", {*end_time, run_id}));
      }
      if (run_name && !run_name->empty()) {
        COHORT_RETURN_IF_ERROR(
            db_->Run("UPDATE runs SET name = ? WHERE run_uuid = ?", {*run_name, run_id}));
        COHORT_RETURN_IF_ERROR(db_->Run(
            "INSERT OR REPLACE INTO tags VALUES (?, 'mlflow.runName', ?)", {run_id, *run_name}));
      }
      COHORT_RETURN_IF_ERROR(tx.Commit());
    }
    auto run = GetRun(run_id);
    if (!run.ok()) return run.status();
    return run->info;
  }

  Status SetRunLifecycle(const std::string& run_id, const std::string& stage) override {
    std::lock_guard<std::mutex> lock(mu_);
    COHORT_RETURN_IF_ERROR(
        db_->Run("UPDATE runs SET lifecycle_stage = ? WHERE run_uuid = ?", {stage, run_id}));
    if (db_->Changes() == 0) return RunNotFound(run_id);
    return Status::OK();
  }

  Result<Page<Run>> SearchRuns(const RunSearch& search) override {
    auto clauses = ParseRunFilter(search.filter);
    if (!clauses.ok()) return clauses.status();
    auto offset = DecodePageToken(search.page_token);
    if (!offset.ok()) return offset.status();
    std::vector<SqlValue> join_values, values;
    std::string joins, order;
    for (size_t i = 0; i < search.order_by.size(); ++i) {
      auto o = ParseRunOrderBy(search.order_by[i]);
      if (!o.ok()) return o.status();
      std::string column;
      if (o->entity == Entity::kAttribute) {
        column = RunColumn(o->key);
      } else {
        std::string alias = "o" + std::to_string(i);
        const char* table = o->entity == Entity::kMetric  ? "latest_metrics"
                            : o->entity == Entity::kParam ? "params"
                                                          : "tags";
        joins += std::string(" LEFT JOIN ") + table + " " + alias + " ON " + alias +
                 ".run_uuid = r.run_uuid AND " + alias + ".key = ?";
        join_values.push_back(o->key);
        column = alias + ".value";
      }
      // Runs without the value sort last either way, as in MLflow.
      order += "(" + column + " IS NULL), " + column + (o->ascending ? " ASC, " : " DESC, ");
    }
    order += "r.start_time DESC, r.run_uuid";
    std::string where = LifecycleCondition("r.lifecycle_stage", search.view);
    if (!search.experiment_ids.empty()) {
      where += " AND r.experiment_id IN (";
      for (size_t i = 0; i < search.experiment_ids.size(); ++i) {
        where += i ? ",?" : "?";
        values.push_back(ExperimentKey(search.experiment_ids[i]));
      }
      where += ")";
    }
    for (const FilterClause& c : *clauses) where += " AND " + RunCondition(c, &values);
    std::vector<SqlValue> all = join_values;
    all.insert(all.end(), values.begin(), values.end());
    all.push_back(int64_t{search.max_results} + 1);
    all.push_back(*offset);
    std::lock_guard<std::mutex> lock(mu_);
    auto ids = QueryIds("SELECT r.run_uuid FROM runs r" + joins + " WHERE " + where + " ORDER BY " +
                            order + " LIMIT ? OFFSET ?",
                        all);
    if (!ids.ok()) return ids.status();
    Page<Run> page;
    if (ids->size() > static_cast<size_t>(search.max_results)) {
      ids->resize(static_cast<size_t>(search.max_results));
      page.next_page_token = EncodePageToken(*offset + search.max_results);
    }
    auto runs = LoadRuns(*ids);
    if (!runs.ok()) return runs.status();
    page.items = std::move(*runs);
    return page;
  }

  Status LogBatch(const std::string& run_id, const Batch& batch) override {
    COHORT_RETURN_IF_ERROR(ValidateBatch(batch));
    std::lock_guard<std::mutex> lock(mu_);
    SqliteTransaction tx(db_.get());
    COHORT_RETURN_IF_ERROR(tx.Begin());
    COHORT_RETURN_IF_ERROR(RequireActiveRun(run_id));
    if (!batch.batch_id.empty()) {
      COHORT_RETURN_IF_ERROR(db_->Run("INSERT OR IGNORE INTO applied_batches VALUES (?, ?)",
                                      {batch.batch_id, run_id}));
      if (db_->Changes() == 0) return Status::OK();  // applied before: a replay
    }
    COHORT_RETURN_IF_ERROR(WriteParams(run_id, batch.params));
    for (const Tag& t : batch.tags) {
      COHORT_RETURN_IF_ERROR(
          db_->Run("INSERT OR REPLACE INTO tags VALUES (?, ?, ?)", {run_id, t.key, t.value}));
    }
    COHORT_RETURN_IF_ERROR(WriteMetrics(run_id, batch.metrics));
    return tx.Commit();
  }

  Status DeleteTag(const std::string& run_id, const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    COHORT_RETURN_IF_ERROR(RequireActiveRun(run_id));
    COHORT_RETURN_IF_ERROR(
        db_->Run("DELETE FROM tags WHERE run_uuid = ? AND key = ?", {run_id, key}));
    if (db_->Changes() == 0) {
      return NotFoundError("No tag with name: " + key + " in run with id " + run_id);
    }
    return Status::OK();
  }

  Result<std::vector<Metric>> GetMetricHistory(const std::string& run_id,
                                               const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    COHORT_RETURN_IF_ERROR(RequireRun(run_id));
    auto stmt = db_->Prepare(
        "SELECT step, timestamp, value, is_nan FROM metrics WHERE run_uuid = ? AND key = ?"
        " ORDER BY step, timestamp");
    if (!stmt.ok()) return stmt.status();
    COHORT_RETURN_IF_ERROR((*stmt)->BindAll({run_id, key}));
    std::vector<Metric> out;
    while (true) {
      auto row = (*stmt)->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      out.push_back({key, ReadMetricValue(**stmt, 2, 3), (*stmt)->Int(1), (*stmt)->Int(0)});
    }
    return out;
  }

  Result<std::vector<HistoryPoint>> GetMetricHistoryBulkInterval(
      const std::vector<std::string>& run_ids, const std::string& key, int max_results,
      std::optional<int64_t> start_step, std::optional<int64_t> end_step) override {
    std::vector<HistoryPoint> out;
    int64_t first = start_step.value_or(INT64_MIN), last = end_step.value_or(INT64_MAX);
    for (const std::string& run_id : run_ids) {
      std::lock_guard<std::mutex> lock(mu_);
      COHORT_RETURN_IF_ERROR(RequireRun(run_id));
      auto stmt = db_->Prepare(
          "SELECT coalesce(sum(count), 0), count(*) FROM metric_buckets WHERE run_uuid = ?"
          " AND key = ? AND bucket BETWEEN ? AND ?");
      if (!stmt.ok()) return stmt.status();
      COHORT_RETURN_IF_ERROR(
          (*stmt)->BindAll({run_id, key, first >> kBucketShift, last >> kBucketShift}));
      auto row = (*stmt)->Step();
      if (!row.ok()) return row.status();
      int64_t points = (*stmt)->Int(0), buckets = (*stmt)->Int(1);
      // Buckets when the series is long and they still give at least half
      // the asked resolution (two points each); rows otherwise.
      bool from_buckets = points > kRowsDownsampleLimit && buckets * 2 >= max_results / 2;
      auto series = from_buckets ? ReadSeriesFromBuckets(run_id, key, first, last)
                                 : ReadSeries(run_id, key, first, last, 0);
      if (!series.ok()) return series.status();
      for (Metric& m : DownsampleMinMax(std::move(*series), static_cast<size_t>(max_results))) {
        out.push_back({run_id, std::move(m)});
      }
    }
    return out;
  }

 private:
  // Points of a series with steps in [first, last], in order; `limit` > 0
  // keeps that many (from the end when `from_end`).
  Result<std::vector<Metric>> ReadSeries(const std::string& run_id, const std::string& key,
                                         int64_t first, int64_t last, int64_t limit,
                                         bool from_end = false) {
    const char* order =
        from_end ? " ORDER BY step DESC, timestamp DESC" : " ORDER BY step, timestamp";
    auto stmt = db_->Prepare(
        std::string("SELECT step, timestamp, value, is_nan FROM metrics WHERE run_uuid = ? AND"
                    " key = ? AND step >= ? AND step <= ?") +
        order + " LIMIT ?");
    if (!stmt.ok()) return stmt.status();
    COHORT_RETURN_IF_ERROR((*stmt)->BindAll({run_id, key, first, last, limit > 0 ? limit : -1}));
    std::vector<Metric> series;
    while (true) {
      auto row = (*stmt)->Step();
      if (!row.ok()) return row.status();
      if (!*row) return series;
      series.push_back({key, ReadMetricValue(**stmt, 2, 3), (*stmt)->Int(1), (*stmt)->Int(0)});
    }
  }

  // A long series as its first and last points, the raw points of the
  // buckets [first, last] cuts, and the lowest and highest point of every
  // bucket inside: what min/max downsampling needs, from ~1/500 of the rows.
  Result<std::vector<Metric>> ReadSeriesFromBuckets(const std::string& run_id,
                                                    const std::string& key, int64_t first,
                                                    int64_t last) {
    int64_t lo = first >> kBucketShift, hi = last >> kBucketShift;
    // Buckets only partly inside [first, last] are read row by row.
    int64_t inner_lo = first == INT64_MIN || (lo << kBucketShift) == first ? lo : lo + 1;
    int64_t inner_hi = last == INT64_MAX || ((hi + 1) << kBucketShift) - 1 == last ? hi : hi - 1;
    auto head = ReadSeries(run_id, key, first, last, 1);
    if (!head.ok()) return head.status();
    std::vector<Metric> series = std::move(*head);
    if (inner_lo > lo) {
      auto edge = ReadSeries(run_id, key, first, (inner_lo << kBucketShift) - 1, 0);
      if (!edge.ok()) return edge.status();
      series.insert(series.end(), edge->begin(), edge->end());
    }
    auto stmt = db_->Prepare(
        "SELECT min_step, min_timestamp, min_value, max_step, max_timestamp, max_value"
        " FROM metric_buckets WHERE run_uuid = ? AND key = ? AND bucket BETWEEN ? AND ?"
        " AND min_step IS NOT NULL ORDER BY bucket");
    if (!stmt.ok()) return stmt.status();
    COHORT_RETURN_IF_ERROR((*stmt)->BindAll({run_id, key, inner_lo, inner_hi}));
    while (true) {
      auto row = (*stmt)->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      SqliteStatement& b = **stmt;
      Metric low{key, b.Double(2), b.Int(1), b.Int(0)};
      Metric high{key, b.Double(5), b.Int(4), b.Int(3)};
      if (high.step < low.step) std::swap(low, high);
      series.push_back(low);
      if (high.step != low.step || high.timestamp != low.timestamp) series.push_back(high);
    }
    if (inner_hi < hi) {
      auto edge = ReadSeries(run_id, key, (inner_hi + 1) << kBucketShift, last, 0);
      if (!edge.ok()) return edge.status();
      series.insert(series.end(), edge->begin(), edge->end());
    }
    auto tail = ReadSeries(run_id, key, first, last, 1, /*from_end=*/true);
    if (!tail.ok()) return tail.status();
    series.insert(series.end(), tail->begin(), tail->end());
    // The first and last points may also be a bucket's extreme or an edge row.
    auto same = [](const Metric& a, const Metric& b) {
      return a.step == b.step && a.timestamp == b.timestamp &&
             (a.value == b.value || (std::isnan(a.value) && std::isnan(b.value)));
    };
    series.erase(std::unique(series.begin(), series.end(), same), series.end());
    return series;
  }

  Status AddUser(const std::string& name) override {
    COHORT_RETURN_IF_ERROR(ValidateKey("user name", name));
    std::lock_guard<std::mutex> lock(mu_);
    Status s = db_->Run("INSERT INTO users VALUES (?, ?)", {name, NowMillis()});
    if (KindOf(s) == ErrorKind::kAlreadyExists) {
      return AlreadyExistsError("User '" + name + "' already exists.");
    }
    return s;
  }

  Result<std::string> CreateToken(const std::string& user) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto known = QueryIds("SELECT name FROM users WHERE name = ?", {user});
    if (!known.ok()) return known.status();
    if (known->empty()) return NotFoundError("User '" + user + "' does not exist.");
    std::string token = "cohort_" + GenerateSecret();
    COHORT_RETURN_IF_ERROR(db_->Run("INSERT INTO tokens VALUES (?, ?, ?)",
                                    {data::Sha256Hex(token), user, NowMillis()}));
    return token;
  }

  Result<std::string> UserForToken(const std::string& token) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto user =
        QueryIds("SELECT user FROM tokens WHERE token_sha256 = ?", {data::Sha256Hex(token)});
    if (!user.ok()) return user.status();
    if (user->empty()) return NotFoundError("unknown token");
    return user->front();
  }

  Status Grant(const std::string& experiment_id, const std::string& user,
               const std::string& level) override {
    if (level != "READ" && level != "EDIT") {
      return Status::InvalidArgument("Invalid permission '" + level + "': expected READ or EDIT");
    }
    std::lock_guard<std::mutex> lock(mu_);
    COHORT_RETURN_IF_ERROR(RequireExperiment(experiment_id, /*active=*/false));
    auto known = QueryIds("SELECT name FROM users WHERE name = ?", {user});
    if (!known.ok()) return known.status();
    if (known->empty()) return NotFoundError("User '" + user + "' does not exist.");
    return db_->Run("INSERT OR REPLACE INTO experiment_permissions VALUES (?, ?, ?)",
                    {ExperimentKey(experiment_id), user, level});
  }

  Result<std::string> Permission(const std::string& experiment_id,
                                 const std::string& user) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto level =
        QueryIds("SELECT level FROM experiment_permissions WHERE experiment_id = ? AND user = ?",
                 {ExperimentKey(experiment_id), user});
    if (!level.ok()) return level.status();
    return level->empty() ? std::string() : level->front();
  }

  Result<std::string> ExperimentOfRun(const std::string& run_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto id = QueryIds("SELECT experiment_id FROM runs WHERE run_uuid = ?", {run_id});
    if (!id.ok()) return id.status();
    if (id->empty()) return RunNotFound(run_id);
    return id->front();
  }

  // Experiment ids are integers in this store; anything else matches none.
  static SqlValue ExperimentKey(const std::string& id) {
    if (id.empty() || id.size() > 18 || id.find_first_not_of("0123456789") != std::string::npos) {
      return int64_t{-1};
    }
    return static_cast<int64_t>(std::stoll(id));
  }

  static Status RunNotFound(const std::string& run_id) {
    return NotFoundError("Run with id=" + run_id + " not found");
  }

  Result<int64_t> LastId() {
    auto ids = QueryIds("SELECT last_insert_rowid()", {});
    if (!ids.ok()) return ids.status();
    return static_cast<int64_t>(std::stoll(ids->front()));
  }

  // First column of every row, as text.
  Result<std::vector<std::string>> QueryIds(const std::string& sql,
                                            const std::vector<SqlValue>& values) {
    auto stmt = db_->Prepare(sql);
    if (!stmt.ok()) return stmt.status();
    COHORT_RETURN_IF_ERROR((*stmt)->BindAll(values));
    std::vector<std::string> out;
    while (true) {
      auto row = (*stmt)->Step();
      if (!row.ok()) return row.status();
      if (!*row) return out;
      out.push_back((*stmt)->Text(0));
    }
  }

  Status RequireExperiment(const std::string& experiment_id, bool active) {
    std::vector<SqlValue> id(1, ExperimentKey(experiment_id));  // not {...}: GCC 12 false warning
    auto stage = QueryIds("SELECT lifecycle_stage FROM experiments WHERE experiment_id = ?", id);
    if (!stage.ok()) return stage.status();
    if (stage->empty()) {
      return NotFoundError("No Experiment with id=" + experiment_id + " exists");
    }
    if (active && stage->front() != kActive) {
      return Status::InvalidArgument("The experiment " + experiment_id +
                                     " must be in the 'active' state. Current state is " +
                                     stage->front() + ".");
    }
    return Status::OK();
  }

  Status RequireRun(const std::string& run_id) {
    auto stage = QueryIds("SELECT lifecycle_stage FROM runs WHERE run_uuid = ?", {run_id});
    if (!stage.ok()) return stage.status();
    if (stage->empty()) return RunNotFound(run_id);
    return Status::OK();
  }

  Status RequireActiveRun(const std::string& run_id) {
    auto stage = QueryIds("SELECT lifecycle_stage FROM runs WHERE run_uuid = ?", {run_id});
    if (!stage.ok()) return stage.status();
    if (stage->empty()) return RunNotFound(run_id);
    if (stage->front() != kActive) {
      return Status::InvalidArgument("The run " + run_id +
                                     " must be in the 'active' state. Current state is " +
                                     stage->front() + ".");
    }
    return Status::OK();
  }

  std::string RunCondition(const FilterClause& c, std::vector<SqlValue>* values) {
    if (c.entity == Entity::kAttribute) return Comparison(RunColumn(c.key), c, values);
    const char* table = c.entity == Entity::kMetric  ? "latest_metrics"
                        : c.entity == Entity::kParam ? "params"
                                                     : "tags";
    values->push_back(c.key);
    return std::string("EXISTS (SELECT 1 FROM ") + table +
           " f WHERE f.run_uuid = r.run_uuid AND f.key = ? AND " +
           Comparison("f.value", c, values) + ")";
  }

  Result<Experiment> LoadExperiment(const std::string& where, const SqlValue& value,
                                    const std::string& not_found) {
    auto stmt = db_->Prepare(
        "SELECT e.experiment_id, e.name, e.artifact_location, e.lifecycle_stage,"
        " e.creation_time, e.last_update_time FROM experiments e WHERE " +
        where);
    if (!stmt.ok()) return stmt.status();
    COHORT_RETURN_IF_ERROR((*stmt)->Bind(1, value));
    auto row = (*stmt)->Step();
    if (!row.ok()) return row.status();
    if (!*row) return NotFoundError(not_found);
    SqliteStatement& s = **stmt;
    Experiment e{s.Text(0), s.Text(1), s.Text(2), s.Text(3), s.Int(4), s.Int(5), {}};
    auto tags = db_->Prepare(
        "SELECT key, value FROM experiment_tags WHERE experiment_id = ?"
        " ORDER BY key");
    if (!tags.ok()) return tags.status();
    COHORT_RETURN_IF_ERROR((*tags)->Bind(1, s.Int(0)));
    while (true) {
      auto r = (*tags)->Step();
      if (!r.ok()) return r.status();
      if (!*r) break;
      e.tags.push_back({(*tags)->Text(0), (*tags)->Text(1)});
    }
    return e;
  }

  // The runs with these ids, in this order, with their latest metrics,
  // params and tags (one query per table for the whole page).
  Result<std::vector<Run>> LoadRuns(const std::vector<std::string>& ids) {
    std::vector<Run> runs;
    if (ids.empty()) return runs;
    std::map<std::string, size_t> index;
    std::string in = "(";
    std::vector<SqlValue> values;
    for (size_t i = 0; i < ids.size(); ++i) {
      in += i ? ",?" : "?";
      values.push_back(ids[i]);
    }
    in += ")";
    auto stmt = db_->Prepare(
        "SELECT run_uuid, name, experiment_id, user_id, status, start_time, end_time,"
        " artifact_uri, lifecycle_stage FROM runs WHERE run_uuid IN " +
        in);
    if (!stmt.ok()) return stmt.status();
    COHORT_RETURN_IF_ERROR((*stmt)->BindAll(values));
    std::map<std::string, Run> found;
    while (true) {
      auto row = (*stmt)->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      SqliteStatement& s = **stmt;
      Run run;
      run.info = {s.Text(0),
                  s.Text(1),
                  s.Text(2),
                  s.Text(3),
                  s.Text(4),
                  s.Int(5),
                  s.IsNull(6) ? std::nullopt : std::optional<int64_t>(s.Int(6)),
                  s.Text(7),
                  s.Text(8)};
      found.emplace(run.info.run_id, std::move(run));
    }
    auto each = [&](const std::string& sql, auto add) -> Status {
      auto q = db_->Prepare(sql + in + " ORDER BY run_uuid, key");
      if (!q.ok()) return q.status();
      COHORT_RETURN_IF_ERROR((*q)->BindAll(values));
      while (true) {
        auto row = (*q)->Step();
        if (!row.ok()) return row.status();
        if (!*row) return Status::OK();
        auto it = found.find((*q)->Text(0));
        if (it != found.end()) add(it->second, **q);
      }
    };
    COHORT_RETURN_IF_ERROR(
        each("SELECT run_uuid, key, value, is_nan, timestamp, step FROM latest_metrics"
             " WHERE run_uuid IN ",
             [](Run& r, const SqliteStatement& s) {
               r.metrics.push_back({s.Text(1), ReadMetricValue(s, 2, 3), s.Int(4), s.Int(5)});
             }));
    COHORT_RETURN_IF_ERROR(each("SELECT run_uuid, key, value FROM params WHERE run_uuid IN ",
                                [](Run& r, const SqliteStatement& s) {
                                  r.params.push_back({s.Text(1), s.Text(2)});
                                }));
    COHORT_RETURN_IF_ERROR(each("SELECT run_uuid, key, value FROM tags WHERE run_uuid IN ",
                                [](Run& r, const SqliteStatement& s) {
                                  r.tags.push_back({s.Text(1), s.Text(2)});
                                }));
    for (const std::string& id : ids) {
      auto it = found.find(id);
      if (it != found.end()) runs.push_back(std::move(it->second));
    }
    return runs;
  }

  // Params are immutable: the same value again is fine, a different one
  // fails the batch naming every changed key.
  Status WriteParams(const std::string& run_id, const std::vector<Param>& params) {
    std::string changed;
    for (const Param& p : params) {
      auto old =
          QueryIds("SELECT value FROM params WHERE run_uuid = ? AND key = ?", {run_id, p.key});
      if (!old.ok()) return old.status();
      if (old->empty()) {
        COHORT_RETURN_IF_ERROR(
            db_->Run("INSERT INTO params VALUES (?, ?, ?)", {run_id, p.key, p.value}));
      } else if (old->front() != p.value) {
        changed += (changed.empty() ? "" : ", ") + std::string("{key: '") + p.key +
                   "', old_value: '" + old->front() + "', new_value: '" + p.value + "'}";
      }
    }
    if (!changed.empty()) {
      return Status::InvalidArgument(
          "Changing param values is not allowed. Params were already logged='[" + changed +
          "]' for run ID='" + run_id + "'.");
    }
    return Status::OK();
  }

  Status WriteMetrics(const std::string& run_id, const std::vector<Metric>& metrics) {
    if (metrics.empty()) return Status::OK();
    auto insert = db_->Prepare("INSERT OR IGNORE INTO metrics VALUES (?, ?, ?, ?, ?, ?)");
    if (!insert.ok()) return insert.status();
    // The newest point of each key in this batch, by (step, timestamp, value).
    std::map<std::string, const Metric*> latest;
    std::map<std::pair<std::string, int64_t>, BucketUpdate> buckets;
    for (const Metric& m : metrics) {
      COHORT_RETURN_IF_ERROR(
          (*insert)->BindAll({run_id, m.key, m.step, m.timestamp, MetricValue(m.value),
                              int64_t{std::isnan(m.value)}}));
      COHORT_RETURN_IF_ERROR((*insert)->Run());
      (*insert)->Reset();
      if (db_->Changes() > 0) buckets[{m.key, m.step >> kBucketShift}].Add(m);
      const Metric*& best = latest[m.key];
      if (best == nullptr ||
          std::tie(m.step, m.timestamp) > std::tie(best->step, best->timestamp) ||
          (m.step == best->step && m.timestamp == best->timestamp && m.value > best->value)) {
        best = &m;
      }
    }
    auto upsert = db_->Prepare(
        "INSERT INTO latest_metrics VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (run_uuid, key)"
        " DO UPDATE SET step = ?3, timestamp = ?4, value = ?5, is_nan = ?6"
        " WHERE (?3, ?4, coalesce(?5, 0)) > (step, timestamp, coalesce(value, 0))");
    if (!upsert.ok()) return upsert.status();
    for (const auto& [key, m] : latest) {
      COHORT_RETURN_IF_ERROR(
          (*upsert)->BindAll({run_id, key, m->step, m->timestamp, MetricValue(m->value),
                              int64_t{std::isnan(m->value)}}));
      COHORT_RETURN_IF_ERROR((*upsert)->Run());
      (*upsert)->Reset();
    }
    return WriteBuckets(run_id, buckets);
  }

  // Folds each bucket's new points into its metric_buckets row. SET
  // expressions see the row's old values, so each CASE compares with them.
  Status WriteBuckets(const std::string& run_id,
                      const std::map<std::pair<std::string, int64_t>, BucketUpdate>& buckets) {
    auto upsert = db_->Prepare(
        "INSERT INTO metric_buckets VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
        " ON CONFLICT (run_uuid, key, bucket) DO UPDATE SET count = count + ?4,"
        " min_step = CASE WHEN ?7 < min_value OR min_value IS NULL THEN ?5 ELSE min_step END,"
        " min_timestamp = CASE WHEN ?7 < min_value OR min_value IS NULL THEN ?6 ELSE min_timestamp "
        "END,"
        " min_value = CASE WHEN ?7 < min_value OR min_value IS NULL THEN ?7 ELSE min_value END,"
        " max_step = CASE WHEN ?10 > max_value OR max_value IS NULL THEN ?8 ELSE max_step END,"
        " max_timestamp = CASE WHEN ?10 > max_value OR max_value IS NULL THEN ?9"
        "   ELSE max_timestamp END,"
        " max_value = CASE WHEN ?10 > max_value OR max_value IS NULL THEN ?10 ELSE max_value END");
    if (!upsert.ok()) return upsert.status();
    for (const auto& [where, b] : buckets) {
      auto point = [](const Metric* m, auto field) -> SqlValue {
        return m ? SqlValue(field(*m)) : SqlValue(nullptr);
      };
      auto step = [](const Metric& m) { return m.step; };
      auto ts = [](const Metric& m) { return m.timestamp; };
      auto value = [](const Metric& m) { return m.value; };
      COHORT_RETURN_IF_ERROR((*upsert)->BindAll(
          {run_id, where.first, where.second, b.count, point(b.min, step), point(b.min, ts),
           point(b.min, value), point(b.max, step), point(b.max, ts), point(b.max, value)}));
      COHORT_RETURN_IF_ERROR((*upsert)->Run());
      (*upsert)->Reset();
    }
    return Status::OK();
  }

  std::mutex mu_;  // one connection, used by one thread at a time
  std::unique_ptr<SqliteDb> db_;
  int lock_fd_;
};

}  // namespace

int SqliteSchemaVersion() { return kSchemaVersion; }

Result<std::unique_ptr<TrackingStore>> OpenSqliteStore(const std::string& raw_path) {
  std::string path = ExpandHome(raw_path);
  if (path.empty()) return Status::InvalidArgument("sqlite store URI names no file");
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::string lock_path = path + ".lock";
  int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IoError("cannot create lock file " + lock_path + ": " + std::strerror(errno));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return AlreadyExistsError("tracking store " + path + " is open in another process (lock " +
                              lock_path + " is held); use that server, or another --store");
  }
  auto db = SqliteDb::Open(path);
  if (!db.ok()) {
    close(fd);
    return db.status();
  }
  auto store = std::make_unique<SqliteStore>(std::move(*db), fd);
  COHORT_RETURN_IF_ERROR(store->Migrate().WithContext("migrating tracking store " + path));
  return std::unique_ptr<TrackingStore>(std::move(store));
}

}  // namespace cohort::track
