// The SQL tracking store's end of lost runs: a client renews its run's
// cohort.alive_until tag with each heartbeat; a RUNNING run past it belongs
// to a process that died without ending it (kill -9, OOM, a node lost).
#include <cstdlib>

#include "track/sql_store.h"

namespace cohort::track {

Result<std::vector<std::string>> SqlStore::EndLostRuns(int64_t now_ms, int64_t since_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  SqlTransaction tx(db_.get());
  COHORT_RETURN_IF_ERROR(tx.Begin());
  auto select = db_->Prepare(
      "SELECT runs.run_uuid, tags.value FROM runs JOIN tags ON tags.run_uuid = runs.run_uuid"
      " AND tags.key = ? WHERE runs.status = 'RUNNING'");
  if (!select.ok()) return select.status();
  COHORT_RETURN_IF_ERROR((*select)->BindAll({std::string(kAliveUntilTag)}));
  std::vector<std::pair<std::string, int64_t>> lost;  // run, its last deadline
  COHORT_RETURN_IF_ERROR((*select)->ForEachRow([&](const SqlStatement& row) {
    // The value is the client's: text that is not a time is no deadline.
    const std::string value = row.Text(1);
    char* end = nullptr;
    const long long until = std::strtoll(value.c_str(), &end, 10);
    if (!value.empty() && end != nullptr && *end == '\0' && until < now_ms && until >= since_ms) {
      lost.emplace_back(row.Text(0), until);
    }
  }));
  std::vector<std::string> ended;
  for (const auto& [run_id, until] : lost) {
    COHORT_RETURN_IF_ERROR(
        db_->Run("UPDATE runs SET status = 'KILLED', end_time = ? WHERE run_uuid = ?"
                 " AND status = 'RUNNING'",
                 {until, run_id}));
    COHORT_RETURN_IF_ERROR(db_->Run(
        "INSERT INTO tags VALUES (?, ?, ?) ON CONFLICT (run_uuid, key)"
        " DO UPDATE SET value = excluded.value",
        {run_id, std::string(kEndReasonTag),
         std::string("its client stopped sending heartbeats (the process ended without ending the "
                     "run)")}));
    ended.push_back(run_id);
  }
  COHORT_RETURN_IF_ERROR(tx.Commit());
  return ended;
}

}  // namespace cohort::track
