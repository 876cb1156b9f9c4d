// Storage: where a dataset's objects and refs live. One interface so the
// local-file backend here and later HTTP (read-only, range requests) and S3
// backends serve the same reader and writer.
//
// Paths are relative, '/'-separated keys ("chunks/ab/cdef...", "refs/heads/main").
// Invariants every backend keeps:
//  - Put is all-or-nothing: a reader sees the whole new object or the old
//    state, never a prefix (local: temp file + fsync + rename; S3: PUT is atomic).
//  - ReplaceIf is a compare-and-swap: it succeeds only when the key still
//    holds `expected` (or is absent, for nullopt), else fails with a conflict
//    (local: flock on KEY.lock around read-compare-rename; S3: conditional PUT
//    with If-Match on the ETag / If-None-Match: *).
#ifndef COHORT_DATA_STORAGE_H_
#define COHORT_DATA_STORAGE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"

namespace cohort::data {

class Storage {
 public:
  virtual ~Storage() = default;

  // Where this storage is, for messages ("/data/mnist", later "s3://bucket/prefix").
  virtual const std::string& location() const = 0;

  // The whole object, or nullopt when it does not exist.
  virtual Result<std::optional<std::string>> Get(const std::string& path) = 0;
  // Up to `len` bytes from `offset` (fewer at the end of the object); an
  // absent object is an error. The call HTTP range reads will implement.
  virtual Result<std::string> Read(const std::string& path, uint64_t offset, uint64_t len) = 0;
  virtual Result<bool> Exists(const std::string& path) = 0;
  virtual Status Put(const std::string& path, std::string_view bytes) = 0;
  // Keys under `prefix` (recursively), sorted; temporary and lock files are not listed.
  virtual Result<std::vector<std::string>> List(const std::string& prefix) = 0;
  // Compare-and-swap, see above. `while_locked` (may be empty) runs after the
  // comparison succeeded and before the swap: a hook for crash tests.
  virtual Status ReplaceIf(const std::string& path, const std::optional<std::string>& expected,
                           std::string_view bytes, const std::function<void()>& while_locked) = 0;
};

// A local directory (created when `create`).
Result<std::unique_ptr<Storage>> OpenLocalStorage(const std::string& dir, bool create);

// Picks the backend from the location's form: today only local paths;
// "http://", "https://" and "s3://" fail with a clear "not supported yet".
Result<std::unique_ptr<Storage>> OpenStorage(const std::string& location, bool create);

// The Status ReplaceIf returns when the key no longer holds what was expected.
Status ConflictError(const std::string& message);

}  // namespace cohort::data

#endif  // COHORT_DATA_STORAGE_H_
