// The SQL tracking store: migrations, experiments, runs, run search, users
// and tokens.
#include "track/sql_store.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "common/logging.h"
#include "data/hash.h"
#include "net/auth.h"
#include "track/page_token.h"
#include "track/validation.h"

namespace cohort::track {
namespace {

const char* const kUpsertExperimentTag =
    "INSERT INTO experiment_tags VALUES (?, ?, ?) ON CONFLICT (experiment_id, key)"
    " DO UPDATE SET value = excluded.value";

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

// A search the database failed, for the client: the SQL and the database's
// message go to the log, not into the answer.
Status SearchFailed(const Status& s, const char* what) {
  if (s.IsInvalidArgument() || s.IsNotFound() || s.IsAlreadyExists()) return s;
  COHORT_LOG(kError) << what << ": " << s.ToString();
  return Status::IoError(std::string(what) +
                         " failed in the tracking store (the server's log has the details)");
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
  return "1 = 1";
}

}  // namespace

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status SqlStore::Migrate(const std::vector<const char*>& migrations) {
  auto stored = db_->SchemaVersion();
  if (!stored.ok()) return stored.status();
  int version = *stored, latest = static_cast<int>(migrations.size());
  if (version > latest) {
    return Status::InvalidArgument("tracking store " + db_->name() + " has schema version " +
                                   std::to_string(version) + ", newer than this cohort's " +
                                   std::to_string(latest) + ": upgrade cohort");
  }
  for (; version < latest; ++version) {
    SqlTransaction tx(db_.get());
    COHORT_RETURN_IF_ERROR(tx.Begin());
    COHORT_RETURN_IF_ERROR(db_->Exec(migrations[version]));
    COHORT_RETURN_IF_ERROR(db_->SetSchemaVersion(version + 1));
    COHORT_RETURN_IF_ERROR(tx.Commit());
  }
  return Status::OK();
}

Result<std::string> SqlStore::CreateExperiment(const std::string& name,
                                               const std::string& artifact_location,
                                               const std::vector<Tag>& tags) {
  COHORT_RETURN_IF_ERROR(ValidateExperimentName(name));
  for (size_t i = 0; i < tags.size(); ++i) {
    COHORT_RETURN_IF_ERROR(ValidateKey("tags[" + std::to_string(i) + "].key", tags[i].key));
  }
  std::lock_guard<std::mutex> lock(mu_);
  SqlTransaction tx(db_.get());
  COHORT_RETURN_IF_ERROR(tx.Begin());
  int64_t now = NowMillis();
  auto insert = db_->Prepare(
      "INSERT INTO experiments (name, artifact_location, lifecycle_stage, creation_time,"
      " last_update_time) VALUES (?, ?, 'active', ?, ?) RETURNING experiment_id");
  if (!insert.ok()) return insert.status();
  COHORT_RETURN_IF_ERROR((*insert)->BindAll({name, artifact_location, now, now}));
  auto row = (*insert)->Step();
  if (row.status().IsAlreadyExists()) {
    return Status::AlreadyExists("Experiment(name=" + name + ") already exists.");
  }
  if (!row.ok()) return row.status();
  int64_t id = (*insert)->Int(0);
  COHORT_RETURN_IF_ERROR((*insert)->Run());  // done before COMMIT
  std::string experiment_id = std::to_string(id);
  if (artifact_location.empty()) {
    COHORT_RETURN_IF_ERROR(
        db_->Run("UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?",
                 {"mlflow-artifacts:/" + experiment_id, id}));
  }
  for (const Tag& t : tags) {
    COHORT_RETURN_IF_ERROR(db_->Run(kUpsertExperimentTag, {id, t.key, t.value}));
  }
  COHORT_RETURN_IF_ERROR(tx.Commit());
  return experiment_id;
}

Result<Experiment> SqlStore::GetExperiment(const std::string& experiment_id) {
  std::lock_guard<std::mutex> lock(mu_);
  return LoadExperiment("e.experiment_id = ?", ExperimentKey(experiment_id),
                        "No Experiment with id=" + experiment_id + " exists");
}

Result<Experiment> SqlStore::GetExperimentByName(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  return LoadExperiment("e.name = ?", name, "Could not find experiment with name '" + name + "'");
}

Result<Page<Experiment>> SqlStore::SearchExperiments(const ExperimentSearch& search) {
  COHORT_RETURN_IF_ERROR(CheckOrderByCount(search.order_by.size()));
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
  if (!ids.ok()) return SearchFailed(ids.status(), "searching experiments");
  Page<Experiment> page;
  for (size_t i = 0; i < ids->size() && i < static_cast<size_t>(search.max_results); ++i) {
    auto e = LoadExperiment("e.experiment_id = ?", std::stoll((*ids)[i]), "experiment vanished");
    if (!e.ok()) return SearchFailed(e.status(), "searching experiments");
    page.items.push_back(std::move(*e));
  }
  if (ids->size() > static_cast<size_t>(search.max_results)) {
    page.next_page_token = EncodePageToken(*offset + search.max_results);
  }
  return page;
}

Status SqlStore::RenameExperiment(const std::string& experiment_id, const std::string& name) {
  COHORT_RETURN_IF_ERROR(ValidateExperimentName(name));
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(RequireExperiment(experiment_id, /*active=*/true));
  Status s =
      db_->Run("UPDATE experiments SET name = ?, last_update_time = ? WHERE experiment_id = ?",
               {name, NowMillis(), ExperimentKey(experiment_id)});
  if (s.IsAlreadyExists()) {
    return Status::AlreadyExists("Experiment(name=" + name + ") already exists.");
  }
  return s;
}

Status SqlStore::SetExperimentLifecycle(const std::string& experiment_id,
                                        const std::string& stage) {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(RequireExperiment(experiment_id, /*active=*/false));
  SqlTransaction tx(db_.get());
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

Status SqlStore::SetExperimentTag(const std::string& experiment_id, const Tag& tag) {
  COHORT_RETURN_IF_ERROR(ValidateKey("key", tag.key));
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(RequireExperiment(experiment_id, /*active=*/true));
  return db_->Run(kUpsertExperimentTag, {ExperimentKey(experiment_id), tag.key, tag.value});
}

Result<Run> SqlStore::CreateRun(const std::string& experiment_id, const std::string& user_id,
                                int64_t start_time, const std::string& run_name,
                                const std::vector<Tag>& tags, const std::string& given_id) {
  for (size_t i = 0; i < tags.size(); ++i) {
    COHORT_RETURN_IF_ERROR(ValidateKey("tags[" + std::to_string(i) + "].key", tags[i].key));
  }
  std::string name = run_name;
  for (const Tag& t : tags) {
    if (t.key == "mlflow.runName" && name.empty()) name = t.value;
  }
  std::string run_id = given_id.empty() ? GenerateSecret().substr(0, 32) : given_id;
  if (name.empty()) name = "run-" + run_id.substr(0, 8);
  {
    std::lock_guard<std::mutex> lock(mu_);
    COHORT_RETURN_IF_ERROR(RequireExperiment(experiment_id, /*active=*/true));
    auto location = QueryIds("SELECT artifact_location FROM experiments WHERE experiment_id = ?",
                             {ExperimentKey(experiment_id)});
    if (!location.ok()) return location.status();
    SqlTransaction tx(db_.get());
    COHORT_RETURN_IF_ERROR(tx.Begin());
    COHORT_RETURN_IF_ERROR(db_->Run(
        "INSERT INTO runs VALUES (?, ?, ?, ?, 'RUNNING', ?, NULL, 'active', ?)",
        {run_id, ExperimentKey(experiment_id), name, user_id, start_time ? start_time : NowMillis(),
         location->front() + "/" + run_id + "/artifacts"}));
    bool has_name_tag = false;
    for (const Tag& t : tags) {
      has_name_tag |= t.key == "mlflow.runName";
      COHORT_RETURN_IF_ERROR(db_->Run(kUpsertTag, {run_id, t.key, t.value}));
    }
    if (!has_name_tag) {
      COHORT_RETURN_IF_ERROR(
          db_->Run("INSERT INTO tags VALUES (?, 'mlflow.runName', ?)", {run_id, name}));
    }
    COHORT_RETURN_IF_ERROR(tx.Commit());
  }
  return GetRun(run_id);
}

Result<Run> SqlStore::GetRun(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto runs = LoadRuns({run_id});
  if (!runs.ok()) return runs.status();
  if (runs->empty()) return RunNotFound(run_id);
  return std::move(runs->front());
}

Result<RunInfo> SqlStore::UpdateRun(const std::string& run_id,
                                    const std::optional<std::string>& status,
                                    const std::optional<int64_t>& end_time,
                                    const std::optional<std::string>& run_name) {
  if (status) COHORT_RETURN_IF_ERROR(ValidateRunStatus(*status));
  {
    std::lock_guard<std::mutex> lock(mu_);
    COHORT_RETURN_IF_ERROR(RequireActiveRun(run_id));
    SqlTransaction tx(db_.get());
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
      COHORT_RETURN_IF_ERROR(
          db_->Run("INSERT INTO tags VALUES (?, 'mlflow.runName', ?) ON CONFLICT (run_uuid, key)"
                   " DO UPDATE SET value = excluded.value",
                   {run_id, *run_name}));
    }
    COHORT_RETURN_IF_ERROR(tx.Commit());
  }
  auto run = GetRun(run_id);
  if (!run.ok()) return run.status();
  return run->info;
}

Status SqlStore::SetRunLifecycle(const std::string& run_id, const std::string& stage) {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(
      db_->Run("UPDATE runs SET lifecycle_stage = ? WHERE run_uuid = ?", {stage, run_id}));
  if (db_->Changes() == 0) return RunNotFound(run_id);
  return Status::OK();
}

Result<Page<Run>> SqlStore::SearchRuns(const RunSearch& search) {
  COHORT_RETURN_IF_ERROR(CheckOrderByCount(search.order_by.size()));
  COHORT_RETURN_IF_ERROR(CheckExperimentIdCount(search.experiment_ids.size()));
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
  if (!ids.ok()) return SearchFailed(ids.status(), "searching runs");
  Page<Run> page;
  if (ids->size() > static_cast<size_t>(search.max_results)) {
    ids->resize(static_cast<size_t>(search.max_results));
    page.next_page_token = EncodePageToken(*offset + search.max_results);
  }
  auto runs = LoadRuns(*ids);
  if (!runs.ok()) return SearchFailed(runs.status(), "searching runs");
  page.items = std::move(*runs);
  return page;
}

Status SqlStore::DeleteTag(const std::string& run_id, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(RequireActiveRun(run_id));
  COHORT_RETURN_IF_ERROR(
      db_->Run("DELETE FROM tags WHERE run_uuid = ? AND key = ?", {run_id, key}));
  if (db_->Changes() == 0) {
    return Status::NotFound("No tag with name: " + key + " in run with id " + run_id);
  }
  return Status::OK();
}

Status SqlStore::AddUser(const std::string& name) {
  COHORT_RETURN_IF_ERROR(ValidateKey("user name", name));
  std::lock_guard<std::mutex> lock(mu_);
  Status s = db_->Run("INSERT INTO users VALUES (?, ?)", {name, NowMillis()});
  if (s.IsAlreadyExists()) {
    return Status::AlreadyExists("User '" + name + "' already exists.");
  }
  return s;
}

Result<std::string> SqlStore::CreateToken(const std::string& user) {
  std::lock_guard<std::mutex> lock(mu_);
  auto known = QueryIds("SELECT name FROM users WHERE name = ?", {user});
  if (!known.ok()) return known.status();
  if (known->empty()) return Status::NotFound("User '" + user + "' does not exist.");
  std::string token = "cohort_" + GenerateSecret();
  COHORT_RETURN_IF_ERROR(
      db_->Run("INSERT INTO tokens VALUES (?, ?, ?)", {data::Sha256Hex(token), user, NowMillis()}));
  return token;
}

Result<std::string> SqlStore::UserForToken(const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto user =
      QueryIds("SELECT \"user\" FROM tokens WHERE token_sha256 = ?", {data::Sha256Hex(token)});
  if (!user.ok()) return user.status();
  if (user->empty()) return Status::NotFound("unknown token");
  return user->front();
}

Status SqlStore::Grant(const std::string& experiment_id, const std::string& user,
                       const std::string& level) {
  if (level != "READ" && level != "EDIT") {
    return Status::InvalidArgument("Invalid permission '" + level + "': expected READ or EDIT");
  }
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(RequireExperiment(experiment_id, /*active=*/false));
  auto known = QueryIds("SELECT name FROM users WHERE name = ?", {user});
  if (!known.ok()) return known.status();
  if (known->empty()) return Status::NotFound("User '" + user + "' does not exist.");
  return db_->Run(
      "INSERT INTO experiment_permissions VALUES (?, ?, ?)"
      " ON CONFLICT (experiment_id, \"user\") DO UPDATE SET level = excluded.level",
      {ExperimentKey(experiment_id), user, level});
}

Result<std::string> SqlStore::Permission(const std::string& experiment_id,
                                         const std::string& user) {
  std::lock_guard<std::mutex> lock(mu_);
  auto level =
      QueryIds("SELECT level FROM experiment_permissions WHERE experiment_id = ? AND \"user\" = ?",
               {ExperimentKey(experiment_id), user});
  if (!level.ok()) return level.status();
  return level->empty() ? std::string() : level->front();
}

Result<std::string> SqlStore::ExperimentOfRun(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto id = QueryIds("SELECT experiment_id FROM runs WHERE run_uuid = ?", {run_id});
  if (!id.ok()) return id.status();
  if (id->empty()) return RunNotFound(run_id);
  return id->front();
}

Result<std::vector<ExperimentActivity>> SqlStore::ExperimentActivities(
    const std::vector<std::string>& experiment_ids) {
  std::lock_guard<std::mutex> lock(mu_);
  // Both by the runs' experiment index; latest_metrics holds one row per
  // run and key, so the second reads no history.
  auto runs = db_->Prepare(
      "SELECT count(*), count(*) FILTER (WHERE status = 'RUNNING'),"
      " count(*) FILTER (WHERE status = 'FINISHED'), count(*) FILTER (WHERE status = 'FAILED'),"
      " count(*) FILTER (WHERE status = 'KILLED'),"
      " coalesce(max(CASE WHEN end_time > start_time THEN end_time ELSE start_time END), 0)"
      " FROM runs WHERE experiment_id = ? AND lifecycle_stage = 'active'");
  if (!runs.ok()) return runs.status();
  auto metrics = db_->Prepare(
      "SELECT coalesce(max(l.timestamp), 0) FROM latest_metrics l JOIN runs r ON"
      " l.run_uuid = r.run_uuid WHERE r.experiment_id = ? AND r.lifecycle_stage = 'active'");
  if (!metrics.ok()) return metrics.status();
  std::vector<ExperimentActivity> out;
  for (const std::string& id : experiment_ids) {
    ExperimentActivity a;
    a.experiment_id = id;
    (*runs)->Reset();
    COHORT_RETURN_IF_ERROR((*runs)->BindAll({ExperimentKey(id)}));
    auto row = (*runs)->Step();
    if (!row.ok()) return row.status();
    if (*row) {
      SqlStatement& r = **runs;
      a.runs = r.Int(0), a.running = r.Int(1), a.finished = r.Int(2), a.failed = r.Int(3);
      a.killed = r.Int(4), a.last_activity_time = r.Int(5);
    }
    (*metrics)->Reset();
    COHORT_RETURN_IF_ERROR((*metrics)->BindAll({ExperimentKey(id)}));
    row = (*metrics)->Step();
    if (!row.ok()) return row.status();
    if (*row) a.last_activity_time = std::max(a.last_activity_time, (*metrics)->Int(0));
    out.push_back(std::move(a));
  }
  return out;
}

// Experiment ids are integers in this store; anything else matches none.
SqlValue SqlStore::ExperimentKey(const std::string& id) {
  if (id.empty() || id.size() > 18 || id.find_first_not_of("0123456789") != std::string::npos) {
    return int64_t{-1};
  }
  return static_cast<int64_t>(std::stoll(id));
}

Status SqlStore::RunNotFound(const std::string& run_id) {
  return Status::NotFound("Run with id=" + run_id + " not found");
}

Result<std::vector<std::string>> SqlStore::QueryIds(const std::string& sql,
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

Status SqlStore::RequireExperiment(const std::string& experiment_id, bool active) {
  std::vector<SqlValue> id(1, ExperimentKey(experiment_id));  // not {...}: GCC 12 false warning
  auto stage = QueryIds("SELECT lifecycle_stage FROM experiments WHERE experiment_id = ?", id);
  if (!stage.ok()) return stage.status();
  if (stage->empty()) {
    return Status::NotFound("No Experiment with id=" + experiment_id + " exists");
  }
  if (active && stage->front() != kActive) {
    return Status::InvalidArgument("The experiment " + experiment_id +
                                   " must be in the 'active' state. Current state is " +
                                   stage->front() + ".");
  }
  return Status::OK();
}

Status SqlStore::RequireRun(const std::string& run_id) {
  auto stage = QueryIds("SELECT lifecycle_stage FROM runs WHERE run_uuid = ?", {run_id});
  if (!stage.ok()) return stage.status();
  if (stage->empty()) return RunNotFound(run_id);
  return Status::OK();
}

Status SqlStore::RequireActiveRun(const std::string& run_id) {
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

std::string SqlStore::RunCondition(const FilterClause& c, std::vector<SqlValue>* values) {
  if (c.entity == Entity::kAttribute) return Comparison(RunColumn(c.key), c, values);
  const char* table = c.entity == Entity::kMetric  ? "latest_metrics"
                      : c.entity == Entity::kParam ? "params"
                                                   : "tags";
  values->push_back(c.key);
  return std::string("EXISTS (SELECT 1 FROM ") + table +
         " f WHERE f.run_uuid = r.run_uuid AND f.key = ? AND " + Comparison("f.value", c, values) +
         ")";
}

Result<Experiment> SqlStore::LoadExperiment(const std::string& where, const SqlValue& value,
                                            const std::string& not_found) {
  auto stmt = db_->Prepare(
      "SELECT e.experiment_id, e.name, e.artifact_location, e.lifecycle_stage,"
      " e.creation_time, e.last_update_time FROM experiments e WHERE " +
      where);
  if (!stmt.ok()) return stmt.status();
  COHORT_RETURN_IF_ERROR((*stmt)->BindAll({value}));
  auto row = (*stmt)->Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::NotFound(not_found);
  SqlStatement& s = **stmt;
  Experiment e{s.Text(0), s.Text(1), s.Text(2), s.Text(3), s.Int(4), s.Int(5), {}};
  auto tags = db_->Prepare(
      "SELECT key, value FROM experiment_tags WHERE experiment_id = ?"
      " ORDER BY key");
  if (!tags.ok()) return tags.status();
  COHORT_RETURN_IF_ERROR((*tags)->BindAll({s.Int(0)}));
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
Result<std::vector<Run>> SqlStore::LoadRuns(const std::vector<std::string>& ids) {
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
    SqlStatement& s = **stmt;
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
           [](Run& r, const SqlStatement& s) {
             r.metrics.push_back({s.Text(1), ReadMetricValue(s, 2, 3), s.Int(4), s.Int(5)});
           }));
  COHORT_RETURN_IF_ERROR(each("SELECT run_uuid, key, value FROM params WHERE run_uuid IN ",
                              [](Run& r, const SqlStatement& s) {
                                r.params.push_back({s.Text(1), s.Text(2)});
                              }));
  COHORT_RETURN_IF_ERROR(each("SELECT run_uuid, key, value FROM tags WHERE run_uuid IN ",
                              [](Run& r, const SqlStatement& s) {
                                r.tags.push_back({s.Text(1), s.Text(2)});
                              }));
  COHORT_RETURN_IF_ERROR(LoadInputs(in, values, &found));
  for (const std::string& id : ids) {
    auto it = found.find(id);
    if (it != found.end()) runs.push_back(std::move(it->second));
  }
  return runs;
}

}  // namespace cohort::track
