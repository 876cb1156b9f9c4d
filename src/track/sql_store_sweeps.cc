// The SQL tracking store's sweep journals: each sweep controller's records
// in order, append-only (sweep/tracking/store_journal.h is the client).
#include "track/sql_store.h"
#include "track/validation.h"

namespace cohort::track {
namespace {

// A record is one journal line (sweep/journal.h); records are small JSON
// objects, so a bound keeps one request from filling the store.
constexpr size_t kMaxSweepRecordLength = 1 << 20;

Status ValidateSweep(const std::string& sweep) {
  if (sweep.empty()) return Status::InvalidArgument("Missing value for required parameter 'sweep'");
  if (sweep.size() > kMaxKeyLength) {
    return Status::InvalidArgument("Parameter 'sweep' is " + std::to_string(sweep.size()) +
                                   " bytes; at most " + std::to_string(kMaxKeyLength));
  }
  return Status::OK();
}

// A second controller's append (or a retried one: the client tells which).
Status TakenSeq(const std::string& experiment_id, const std::string& sweep, int64_t seq) {
  return Status::AlreadyExists("Sweep '" + sweep + "' of experiment " + experiment_id +
                               " already has record " + std::to_string(seq) +
                               ": another controller is running this sweep");
}

}  // namespace

Status SqlStore::AppendSweepRecord(const std::string& experiment_id, const std::string& sweep,
                                   int64_t seq, const std::string& record) {
  COHORT_RETURN_IF_ERROR(ValidateSweep(sweep));
  if (seq < 0) {
    return Status::InvalidArgument("Invalid value " + std::to_string(seq) +
                                   " for parameter 'seq' supplied: it must be 0 or more");
  }
  if (record.empty() || record.size() > kMaxSweepRecordLength ||
      record.find('\n') != std::string::npos) {
    return Status::InvalidArgument(
        "Invalid value for parameter 'record' supplied: it must be one line of 1 to " +
        std::to_string(kMaxSweepRecordLength) + " bytes");
  }
  std::lock_guard<std::mutex> lock(mu_);
  SqlTransaction tx(db_.get());
  COHORT_RETURN_IF_ERROR(tx.Begin());
  COHORT_RETURN_IF_ERROR(RequireExperiment(experiment_id, /*active=*/true));
  SqlValue id = ExperimentKey(experiment_id);
  auto count = QueryIds("SELECT count(*) FROM sweep_journal WHERE experiment_id = ? AND sweep = ?",
                        {id, sweep});
  if (!count.ok()) return count.status();
  int64_t next = std::stoll(count->front());
  if (seq < next) return TakenSeq(experiment_id, sweep, seq);
  if (seq > next) {
    return Status::InvalidArgument(
        "Invalid value " + std::to_string(seq) + " for parameter 'seq' supplied: sweep '" + sweep +
        "' has " + std::to_string(next) + " records, so the next is " + std::to_string(next));
  }
  Status s = db_->Run("INSERT INTO sweep_journal VALUES (?, ?, ?, ?)", {id, sweep, seq, record});
  if (s.IsAlreadyExists()) {  // the key is the last word
    return TakenSeq(experiment_id, sweep, seq);
  }
  COHORT_RETURN_IF_ERROR(s);
  return tx.Commit();
}

Result<std::vector<std::string>> SqlStore::SweepJournal(const std::string& experiment_id,
                                                        const std::string& sweep) {
  COHORT_RETURN_IF_ERROR(ValidateSweep(sweep));
  std::lock_guard<std::mutex> lock(mu_);
  COHORT_RETURN_IF_ERROR(RequireExperiment(experiment_id, /*active=*/false));
  return QueryIds(
      "SELECT record FROM sweep_journal WHERE experiment_id = ? AND sweep = ? ORDER BY seq",
      {ExperimentKey(experiment_id), sweep});
}

}  // namespace cohort::track
