// Chunk compression: none, zstd or lz4, chosen per chunk and recorded in the
// chunk header, so one dataset may mix them.
#ifndef COHORT_DATA_COMPRESS_H_
#define COHORT_DATA_COMPRESS_H_

#include <string>
#include <string_view>

#include "cohort/data.h"

namespace cohort::data {

Result<std::string> Compress(Compression c, int level, std::string_view raw);
// `raw_size` is the size recorded in the header; anything else is corruption.
Result<std::string> Decompress(Compression c, std::string_view stored, size_t raw_size);

}  // namespace cohort::data

#endif  // COHORT_DATA_COMPRESS_H_
