// zstd and lz4 through their one-shot APIs (chunks are bounded, ~16 MiB).
#include "data/compress.h"

#include <lz4.h>
#include <zstd.h>

#include <climits>

namespace cohort::data {

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "none";
    case Compression::kZstd:
      return "zstd";
    case Compression::kLz4:
      return "lz4";
  }
  return "unknown";
}

Result<Compression> ParseCompression(const std::string& name) {
  if (name == "none") return Compression::kNone;
  if (name == "zstd") return Compression::kZstd;
  if (name == "lz4") return Compression::kLz4;
  return Status::InvalidArgument("unknown compression '" + name + "' (expected none, zstd or lz4)");
}

Result<std::string> Compress(Compression c, int level, std::string_view raw) {
  if (c == Compression::kNone) return std::string(raw);
  std::string out;
  if (c == Compression::kZstd) {
    out.resize(ZSTD_compressBound(raw.size()));
    size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(),
                             level == 0 ? ZSTD_CLEVEL_DEFAULT : level);
    if (ZSTD_isError(n)) return Status::Internal(std::string("zstd: ") + ZSTD_getErrorName(n));
    out.resize(n);
    return out;
  }
  if (raw.size() > static_cast<size_t>(LZ4_MAX_INPUT_SIZE)) {
    return Status::InvalidArgument("lz4 cannot compress a chunk of " + std::to_string(raw.size()) +
                                   " bytes; use a smaller chunk size");
  }
  out.resize(LZ4_compressBound(static_cast<int>(raw.size())));
  int n = LZ4_compress_fast(raw.data(), out.data(), static_cast<int>(raw.size()),
                            static_cast<int>(out.size()), level <= 0 ? 1 : level);
  if (n <= 0) return Status::Internal("lz4 compression failed");
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<std::string> Decompress(Compression c, std::string_view stored, size_t raw_size) {
  if (c == Compression::kNone) {
    if (stored.size() != raw_size) return Status::IoError("payload size does not match header");
    return std::string(stored);
  }
  std::string out(raw_size, '\0');
  if (c == Compression::kZstd) {
    size_t n = ZSTD_decompress(out.data(), out.size(), stored.data(), stored.size());
    if (ZSTD_isError(n) || n != raw_size) {
      return Status::IoError(std::string("zstd payload does not decompress: ") +
                             (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size"));
    }
    return out;
  }
  if (raw_size > static_cast<size_t>(INT_MAX) || stored.size() > static_cast<size_t>(INT_MAX)) {
    return Status::IoError("lz4 payload too large");
  }
  int n = LZ4_decompress_safe(stored.data(), out.data(), static_cast<int>(stored.size()),
                              static_cast<int>(raw_size));
  if (n < 0 || static_cast<size_t>(n) != raw_size) {
    return Status::IoError("lz4 payload does not decompress");
  }
  return out;
}

}  // namespace cohort::data
