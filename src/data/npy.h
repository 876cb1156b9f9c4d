// NumPy .npy files (format versions 1, 2 and 3): the header parsed by hand,
// so ingest needs no Python. Only C-order, little-endian arrays of the
// cohort dtypes are accepted.
#ifndef COHORT_DATA_NPY_H_
#define COHORT_DATA_NPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "cohort/types.h"

namespace cohort::data {

struct NpyHeader {
  DataType dtype = DataType::kUInt8;
  std::vector<uint64_t> shape;
  uint64_t data_offset = 0;  // where the array's bytes start in the file
};

// Parses the magic, version, header length and the header dict from the
// first bytes of a file (the first 64 KiB are plenty for any sane header).
Result<NpyHeader> ParseNpyHeader(const std::string& prefix);
// A complete version-1 header (padded to 64 bytes) for `dtype` and `shape`.
std::string MakeNpyHeader(DataType dtype, const std::vector<uint64_t>& shape);

}  // namespace cohort::data

#endif  // COHORT_DATA_NPY_H_
