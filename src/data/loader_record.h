// A record of a chunk read in place: each column's shape and a view of its
// bytes, without the copies DecodeRecord makes (the loader copies each value
// once, straight into the batch).
#ifndef COHORT_DATA_LOADER_RECORD_H_
#define COHORT_DATA_LOADER_RECORD_H_

#include <string_view>
#include <vector>

#include "cohort/data.h"

namespace cohort::data {

struct ValueView {
  std::vector<uint64_t> shape;
  std::string_view bytes;
};

// Parses `record` (laid out as docs/dataset-format.md says) into one view per
// column of `schema`; `out` is reused across calls to keep its allocations.
Status ParseRecordView(const Schema& schema, std::string_view record, std::vector<ValueView>* out);

}  // namespace cohort::data

#endif  // COHORT_DATA_LOADER_RECORD_H_
