// The queue's SQLite tables and the job record's columns.
#include "queue/queue_store.h"

namespace cohort::queue {
namespace {

using nlohmann::json;

// IF NOT EXISTS: the tables are created on first open and kept after.
const char kSchema[] =
    "CREATE TABLE IF NOT EXISTS queue_jobs ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, user TEXT NOT NULL, project TEXT NOT NULL,"
    " pool TEXT NOT NULL, slots INTEGER NOT NULL, priority TEXT NOT NULL, max_time REAL NOT NULL,"
    " command TEXT NOT NULL, cwd TEXT NOT NULL, env TEXT NOT NULL,"
    " state TEXT NOT NULL, submitted REAL NOT NULL, started REAL NOT NULL DEFAULT 0,"
    " finished REAL NOT NULL DEFAULT 0, reason TEXT NOT NULL DEFAULT '',"
    " exit_code INTEGER NOT NULL DEFAULT -1, restarts INTEGER NOT NULL DEFAULT 0,"
    " host TEXT NOT NULL DEFAULT '', wrapper_pid INTEGER NOT NULL DEFAULT 0,"
    " wrapper_start TEXT NOT NULL DEFAULT '', job_pgid INTEGER NOT NULL DEFAULT 0,"
    " stop TEXT NOT NULL DEFAULT '', stop_since REAL NOT NULL DEFAULT 0,"
    " slurm_id TEXT NOT NULL DEFAULT '', placement TEXT NOT NULL DEFAULT '',"
    " borrowed INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS queue_jobs_by_state ON queue_jobs (state);";

const char kColumns[] =
    "id, user, project, pool, slots, priority, max_time, command, cwd, env, state, submitted,"
    " started, finished, reason, exit_code, restarts, host, wrapper_pid, wrapper_start,"
    " job_pgid, stop, stop_since, slurm_id, placement, borrowed";

std::vector<std::string> StringList(const std::string& text) {
  json parsed = json::parse(text, nullptr, false);
  std::vector<std::string> out;
  if (!parsed.is_array()) return out;
  for (const auto& item : parsed) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

std::string Dump(const std::vector<std::string>& list) {
  return json(list).dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<JobRecord> ReadRow(const track::SqlStatement& row) {
  JobRecord job;
  job.id = static_cast<uint64_t>(row.Int(0));
  job.user = row.Text(1);
  job.project = row.Text(2);
  job.pool = row.Text(3);
  job.slots = static_cast<int>(row.Int(4));
  auto priority = sched::ParsePriority(row.Text(5));
  if (!priority.ok()) return priority.status().WithContext("queue job " + std::to_string(job.id));
  job.priority = *priority;
  job.max_time = row.Double(6);
  job.command = StringList(row.Text(7));
  job.cwd = row.Text(8);
  job.env = StringList(row.Text(9));
  auto state = ParseState(row.Text(10));
  if (!state.ok()) return state.status().WithContext("queue job " + std::to_string(job.id));
  job.state = *state;
  job.submitted = row.Double(11);
  job.started = row.Double(12);
  job.finished = row.Double(13);
  job.reason = row.Text(14);
  job.exit_code = static_cast<int>(row.Int(15));
  job.restarts = static_cast<int>(row.Int(16));
  job.host = row.Text(17);
  job.wrapper_pid = static_cast<int>(row.Int(18));
  job.wrapper_start = row.Text(19);
  job.job_pgid = static_cast<int>(row.Int(20));
  job.stop = ParseStopReason(row.Text(21));
  job.stop_since = row.Double(22);
  job.slurm_id = row.Text(23);
  job.placement = row.Text(24);
  job.borrowed = row.Int(25) != 0;
  return job;
}

}  // namespace

Result<std::unique_ptr<QueueStore>> QueueStore::Open(const std::string& path) {
  // Two servers whose stores share a folder share its default queue file:
  // the second needs a queue file of its own, not another store.
  auto db = track::SqliteDb::Open(
      path,
      "use that server's queue, or give this server's queue a file of its own with "
      "--queue-db PATH");
  if (!db.ok()) return db.status();
  COHORT_RETURN_IF_ERROR((*db)->Exec(kSchema));
  return std::unique_ptr<QueueStore>(new QueueStore(std::move(*db)));
}

Result<uint64_t> QueueStore::Insert(const JobRecord& job) {
  COHORT_RETURN_IF_ERROR(db_->Run(
      "INSERT INTO queue_jobs (user, project, pool, slots, priority, max_time, command, cwd, env,"
      " state, submitted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      {job.user, job.project, job.pool, int64_t{job.slots}, sched::PriorityName(job.priority),
       job.max_time, Dump(job.command), job.cwd, Dump(job.env), StateName(job.state),
       job.submitted}));
  auto stmt = db_->Prepare("SELECT last_insert_rowid()");
  if (!stmt.ok()) return stmt.status();
  auto row = (*stmt)->Step();
  if (!row.ok()) return row.status();
  return static_cast<uint64_t>((*stmt)->Int(0));
}

Result<std::vector<JobRecord>> QueueStore::Select(const std::string& where) {
  auto stmt = db_->Prepare(std::string("SELECT ") + kColumns + " FROM queue_jobs " + where +
                           " ORDER BY id");
  if (!stmt.ok()) return stmt.status();
  std::vector<JobRecord> out;
  while (true) {
    auto row = (*stmt)->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    auto job = ReadRow(**stmt);
    if (!job.ok()) return job.status();
    out.push_back(std::move(*job));
  }
  return out;
}

Result<std::optional<JobRecord>> QueueStore::Get(uint64_t id) {
  // The id is a number formatted here, never text from a request.
  auto jobs = Select("WHERE id = " + std::to_string(id));
  if (!jobs.ok()) return jobs.status();
  if (jobs->empty()) return std::optional<JobRecord>();
  return std::optional<JobRecord>(std::move(jobs->front()));
}

Result<std::vector<JobRecord>> QueueStore::List() { return Select(""); }

Result<std::vector<JobRecord>> QueueStore::Active() {
  return Select("WHERE state IN ('pending', 'starting', 'running', 'preempted')");
}

Status QueueStore::Update(const JobRecord& job) {
  return db_->Run(
      "UPDATE queue_jobs SET state = ?, started = ?, finished = ?, reason = ?, exit_code = ?,"
      " restarts = ?, host = ?, wrapper_pid = ?, wrapper_start = ?, job_pgid = ?, stop = ?,"
      " stop_since = ?, slurm_id = ?, placement = ?, borrowed = ? WHERE id = ?",
      {StateName(job.state), job.started, job.finished, job.reason, int64_t{job.exit_code},
       int64_t{job.restarts}, job.host, int64_t{job.wrapper_pid}, job.wrapper_start,
       int64_t{job.job_pgid}, StopReasonName(job.stop), job.stop_since, job.slurm_id, job.placement,
       int64_t{job.borrowed}, static_cast<int64_t>(job.id)});
}

}  // namespace cohort::queue
