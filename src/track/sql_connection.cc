// What every SQL connection does the same way: running a statement to its
// end, and transactions.
#include "track/sql_connection.h"

namespace cohort::track {

Status SqlStatement::Run() {
  while (true) {
    auto row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::OK();
  }
}

Status SqlStatement::ForEachRow(const std::function<void(const SqlStatement&)>& row) {
  while (true) {
    auto more = Step();
    if (!more.ok()) return more.status();
    if (!*more) return Status::OK();
    row(*this);
  }
}

Status SqlConnection::Run(const std::string& sql, const std::vector<SqlValue>& values) {
  auto stmt = Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  COHORT_RETURN_IF_ERROR((*stmt)->BindAll(values));
  return (*stmt)->Run();
}

SqlTransaction::~SqlTransaction() {
  if (open_) db_->Exec("ROLLBACK");
}

Status SqlTransaction::Begin() {
  COHORT_RETURN_IF_ERROR(db_->Begin());
  open_ = true;
  return Status::OK();
}

Status SqlTransaction::Commit() {
  COHORT_RETURN_IF_ERROR(db_->Exec("COMMIT"));
  open_ = false;
  return Status::OK();
}

}  // namespace cohort::track
