// The sweep's journal in the tracking store, for `cohort sweep --tracking
// http://...`: each record a row of the server's sweep_journal table,
// appended synchronously (not through the tracking client's spool, which
// lags and cannot read back) so a record is stored before the trial hears
// the decision it holds. Built into the `cohort` command, like the
// tracked sweep's observer.
#ifndef COHORT_SWEEP_TRACKING_STORE_JOURNAL_H_
#define COHORT_SWEEP_TRACKING_STORE_JOURNAL_H_

#include <memory>
#include <string>

#include "cohort/status.h"
#include "sweep/journal.h"

namespace cohort::track {
class Transport;
}  // namespace cohort::track

namespace cohort::sweep {

struct StoreJournalOptions {
  std::string uri;         // the tracking server, http(s)://HOST:PORT
  std::string experiment;  // the experiment the sweep belongs to (created if missing)
  std::string sweep;       // the sweep's key within it
  // A file journal (DIR/journal) of the same sweep. When it holds records
  // and the store none, they are copied into the store once and the file is
  // renamed to FILE.imported; when both hold records, the sweep is refused
  // (which of the two is the truth cannot be told).
  std::string file_journal;
  // The journal's address is written to FILE.store (one line of JSON: uri,
  // experiment_id, sweep), so people and tools find where the journal went.
  // How long one append is retried while the server cannot be reached;
  // then it fails and the sweep stops (its state stays in the store).
  // `cohort sweep` takes it from COHORT_SWEEP_JOURNAL_DEADLINE_S.
  double append_deadline_s = 60;
};

Result<std::unique_ptr<Journal>> OpenStoreJournal(const StoreJournalOptions& options);

// The journal over `transport` for the sweep of experiment `experiment_id`,
// without OpenStoreJournal's lookups and import (tests give a fake server).
// Call Records() first: it learns the next seq.
std::unique_ptr<Journal> NewStoreJournal(std::unique_ptr<track::Transport> transport,
                                         const StoreJournalOptions& options,
                                         const std::string& experiment_id);

}  // namespace cohort::sweep

#endif  // COHORT_SWEEP_TRACKING_STORE_JOURNAL_H_
