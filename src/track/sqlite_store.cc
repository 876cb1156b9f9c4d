// The SQLite tracking store (the embedded default): its schema migrations
// and opening the file. The store itself is SQL shared with PostgreSQL
// (sql_store.h).
#include "track/sqlite_store.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "track/sql_store.h"
#include "track/sqlite_db.h"

namespace cohort::track {
namespace {

// Each entry moves the schema one version up; never edit a released entry,
// append a new one.
const std::vector<const char*> kMigrations = {
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
    // 6: datasets runs used (runs/log-inputs): one per experiment, name and
    // digest; which run used which, with the input's tags.
    "CREATE TABLE datasets (experiment_id INTEGER NOT NULL REFERENCES experiments,"
    "  name TEXT NOT NULL, digest TEXT NOT NULL, source_type TEXT NOT NULL, source TEXT NOT NULL,"
    "  dataset_schema TEXT NOT NULL, dataset_profile TEXT NOT NULL,"
    "  PRIMARY KEY (experiment_id, name, digest)) WITHOUT ROWID;"
    "CREATE TABLE inputs (run_uuid TEXT NOT NULL REFERENCES runs, name TEXT NOT NULL,"
    "  digest TEXT NOT NULL, PRIMARY KEY (run_uuid, name, digest)) WITHOUT ROWID;"
    "CREATE TABLE input_tags (run_uuid TEXT NOT NULL, name TEXT NOT NULL, digest TEXT NOT NULL,"
    "  key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (run_uuid, name, digest, key))"
    "  WITHOUT ROWID;",
    // 7: sweep journals (sweep/tracking/store_journal.h): a controller's
    // records by (experiment, sweep, seq), append-only; the key refuses a
    // second controller's record at a taken seq.
    "CREATE TABLE sweep_journal (experiment_id INTEGER NOT NULL REFERENCES experiments,"
    "  sweep TEXT NOT NULL, seq INTEGER NOT NULL, record TEXT NOT NULL,"
    "  PRIMARY KEY (experiment_id, sweep, seq)) WITHOUT ROWID;",
    // 8: the job queue's grants (per queue project; '*' is every project)
    // and the agents' credentials (SHA-256 of the secret only).
    "CREATE TABLE queue_permissions (project TEXT NOT NULL, user TEXT NOT NULL REFERENCES users,"
    "  level TEXT NOT NULL, PRIMARY KEY (project, user)) WITHOUT ROWID;"
    "CREATE TABLE agent_credentials (name TEXT PRIMARY KEY, secret_sha256 TEXT NOT NULL UNIQUE,"
    "  creation_time INTEGER NOT NULL) WITHOUT ROWID;",
    // 9: pipelines' status documents (the dashboard's DAG view), one per
    // pipeline, owned by the user who first put it.
    "CREATE TABLE pipeline_status (name TEXT PRIMARY KEY, owner TEXT NOT NULL,"
    "  status TEXT NOT NULL, update_time INTEGER NOT NULL) WITHOUT ROWID;",
};
}  // namespace

std::string ExpandHome(const std::string& path) {
  if (path.rfind("~/", 0) != 0) return path;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + path.substr(1);
}

int SqliteSchemaVersion() { return static_cast<int>(kMigrations.size()); }

Result<std::unique_ptr<TrackingStore>> OpenSqliteStore(const std::string& raw_path) {
  std::string path = ExpandHome(raw_path);
  if (path.empty()) return Status::InvalidArgument("sqlite store URI names no file");
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  auto db = SqliteDb::Open(path);
  if (!db.ok()) return db.status();
  auto store = std::make_unique<SqlStore>(std::move(*db));
  COHORT_RETURN_IF_ERROR(
      store->Migrate(kMigrations).WithContext("migrating tracking store " + path));
  return std::unique_ptr<TrackingStore>(std::move(store));
}

}  // namespace cohort::track
