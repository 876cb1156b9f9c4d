// Ingest: turning files into dataset commits. Today .npy arrays (each row
// along axis 0 becomes one sample); image folders and parallel ingest come later.
#ifndef COHORT_DATA_INGEST_H_
#define COHORT_DATA_INGEST_H_

#include <string>

#include "cohort/data.h"

namespace cohort::data {

struct NumpyIngestOptions {
  std::string column = "data";  // the one array column the rows go into
  // A new dataset's column takes the file's row shape as its fixed shape
  // (later ingests must match it) unless declared ragged here.
  bool ragged = false;
  WriterOptions writer;         // branch, chunk size, compression
  std::string message;          // empty: "ingest FILE"
  std::string author;
  std::string command;  // recorded in the commit
};

struct IngestResult {
  uint64_t samples = 0;
  std::string commit;
  bool created = false;  // the dataset did not exist before
};

// Appends every row of the .npy file `file` to the dataset at `location`
// (created with one array column when absent; otherwise its schema must be
// exactly that column) and commits.
Result<IngestResult> IngestNumpy(const std::string& location, const std::string& file,
                                 NumpyIngestOptions options);

}  // namespace cohort::data

#endif  // COHORT_DATA_INGEST_H_
