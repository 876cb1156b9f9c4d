// The sweep controller's state as an append-only list of records (one line of
// JSON each). Replaying the records on a fresh Study with the same options
// rebuilds it exactly, because every algorithm is deterministic for its seed.
// Two implementations: the file DIR/journal (below, the embedded default) and
// the tracking store's (sweep/tracking/store_journal.h, with a server).
#ifndef COHORT_SWEEP_JOURNAL_H_
#define COHORT_SWEEP_JOURNAL_H_

#include <memory>
#include <string>
#include <vector>

#include "cohort/status.h"

namespace cohort::sweep {

class Journal {
 public:
  virtual ~Journal() = default;
  // Durable when it returns. `record` holds no newline.
  virtual Status Append(const std::string& record) = 0;
  // Every record appended so far, oldest first.
  virtual Result<std::vector<std::string>> Records() = 0;
};

// A file of lines, each written with one write() and fsync'd. A last line
// without its newline (a crash mid-write) is dropped when the file is read.
Result<std::unique_ptr<Journal>> OpenFileJournal(const std::string& path);

}  // namespace cohort::sweep

#endif  // COHORT_SWEEP_JOURNAL_H_
