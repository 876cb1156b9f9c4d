// The SQL tracking store's pipeline status documents: one per pipeline,
// replaced whole by its controller (server/pipeline_status_api.h).
#include "track/sql_store.h"
#include "track/validation.h"

namespace cohort::track {
namespace {

// A document names each step's state, datums and jobs; a bound keeps one
// request from filling the store.
constexpr size_t kMaxPipelineStatusLength = 4 << 20;

Result<std::vector<PipelineStatusRecord>> ReadRecords(SqlConnection* db, const std::string& sql,
                                                      const std::vector<SqlValue>& values) {
  auto statement = db->Prepare(sql);
  if (!statement.ok()) return statement.status();
  COHORT_RETURN_IF_ERROR((*statement)->BindAll(values));
  std::vector<PipelineStatusRecord> records;
  COHORT_RETURN_IF_ERROR((*statement)->ForEachRow([&](const SqlStatement& row) {
    records.push_back({row.Text(0), row.Text(1), row.Text(2), row.Int(3)});
  }));
  return records;
}

}  // namespace

Status SqlStore::PutPipelineStatus(const std::string& name, const std::string& user,
                                   const std::string& status) {
  COHORT_RETURN_IF_ERROR(ValidateKey("pipeline name", name));
  if (status.empty() || status.size() > kMaxPipelineStatusLength) {
    return Status::InvalidArgument(
        "Invalid value for parameter 'status' supplied: it must be 1 to " +
        std::to_string(kMaxPipelineStatusLength) + " bytes");
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Only the owner's put updates the row; no change means another user owns it.
  COHORT_RETURN_IF_ERROR(
      db_->Run("INSERT INTO pipeline_status VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET"
               " status = excluded.status, update_time = excluded.update_time"
               " WHERE pipeline_status.owner = excluded.owner",
               {name, user, status, NowMillis()}));
  if (db_->Changes() > 0) return Status::OK();
  auto owner = QueryIds("SELECT owner FROM pipeline_status WHERE name = ?", {name});
  if (!owner.ok()) return owner.status();
  return Status::PermissionDenied("Pipeline '" + name + "' belongs to user '" +
                                  (owner->empty() ? "" : owner->front()) +
                                  "': another user's controller cannot replace its status");
}

Result<PipelineStatusRecord> SqlStore::GetPipelineStatus(const std::string& name) {
  COHORT_RETURN_IF_ERROR(ValidateKey("pipeline name", name));
  std::lock_guard<std::mutex> lock(mu_);
  auto records = ReadRecords(
      db_.get(), "SELECT name, owner, status, update_time FROM pipeline_status WHERE name = ?",
      {name});
  if (!records.ok()) return records.status();
  if (records->empty()) return Status::NotFound("No pipeline named '" + name + "'");
  return records->front();
}

Result<std::vector<PipelineStatusRecord>> SqlStore::PipelineStatuses() {
  std::lock_guard<std::mutex> lock(mu_);
  return ReadRecords(db_.get(),
                     "SELECT name, owner, status, update_time FROM pipeline_status"
                     " ORDER BY update_time DESC, name",
                     {});
}

}  // namespace cohort::track
