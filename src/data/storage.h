// Storage: where a dataset's objects and refs live. One interface so the
// local-file, HTTP (read-only, range requests) and S3 backends serve the same
// reader and writer; an optional local cache wraps any of them.
//
// Paths are relative, '/'-separated keys ("chunks/ab/cdef...", "refs/heads/main").
// Invariants every backend keeps:
//  - Put is all-or-nothing: a reader sees the whole new object or the old
//    state, never a prefix (local: temp file + fsync + rename; S3: PUT is atomic).
//  - ReplaceIf is a compare-and-swap: it succeeds only when the key still
//    holds `expected` (or is absent, for nullopt), else fails with a conflict
//    (local: flock on KEY.lock around read-compare-rename; S3: conditional PUT
//    with If-Match on the ETag / If-None-Match: *; see s3_storage.cc for
//    servers that ignore those headers).
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
#include "http/retry_policy.h"

namespace cohort::data {

// Reads to end of object: Read(path, offset, kToEnd).
inline constexpr uint64_t kToEnd = ~uint64_t{0};

// One ranged read of a batch (see Storage::ReadMany).
struct ByteRange {
  std::string path;
  uint64_t offset = 0;
  uint64_t len = kToEnd;
};

// An object's bytes and whatever keeps them alive: a string, or a read-only
// mapping of a local file (objects are immutable and only ever replaced by
// rename, so a mapping never sees them change).
struct ObjectBytes {
  std::shared_ptr<const void> owner;
  std::string_view bytes;

  static ObjectBytes Own(std::string bytes);
};

// A key and when its object was last written, in seconds since the Unix
// epoch by the storage's clock (file mtime, S3 LastModified).
struct ListedObject {
  std::string key;
  int64_t modified = 0;
};

class Storage {
 public:
  virtual ~Storage() = default;

  // Where this storage is, for messages ("/data/mnist", later "s3://bucket/prefix").
  virtual const std::string& location() const = 0;

  // The whole object, or nullopt when it does not exist.
  virtual Result<std::optional<std::string>> Get(const std::string& path) = 0;
  // Get without copying where the backend can: the local backend maps large
  // files (page-cache pages, no copy, no zero-filled buffer), the rest wrap Get.
  virtual Result<std::optional<ObjectBytes>> GetBytes(const std::string& path);
  // Up to `len` bytes from `offset` (fewer at the end of the object); an
  // absent object is an error. The call HTTP range reads will implement.
  virtual Result<std::string> Read(const std::string& path, uint64_t offset, uint64_t len) = 0;
  // Every range of `ranges`, results in the same order; fails as a whole
  // when one read fails. Remote backends keep many requests in flight, so a
  // loader can fetch the chunks it will need next in one call.
  virtual Result<std::vector<std::string>> ReadMany(const std::vector<ByteRange>& ranges);
  virtual Result<bool> Exists(const std::string& path) = 0;
  virtual Status Put(const std::string& path, std::string_view bytes) = 0;
  // Removes the object; an absent one is not an error (deleting twice is
  // fine). Read-only backends (HTTP) fail with a message naming the location.
  virtual Status Delete(const std::string& path);
  // Keys under `prefix` (recursively), sorted; temporary and lock files are not listed.
  virtual Result<std::vector<std::string>> List(const std::string& prefix) = 0;
  // Deletes what writers killed in the middle of a Put left under `prefix`
  // and returns the names deleted. Only what no live writer holds goes: a
  // local directory's writer keeps an flock on its temporary file until the
  // rename, and the kernel drops it when the writer dies. The default:
  // nothing to collect (an S3 PUT leaves no partial object; HTTP is read-only).
  virtual Result<std::vector<std::string>> CollectAbandonedWrites(const std::string& prefix);
  // List with each object's modification time (`cohort data gc`); the
  // default says the backend cannot (HTTP).
  virtual Result<std::vector<ListedObject>> ListModified(const std::string& prefix);
  // Compare-and-swap, see above. `while_locked` (may be empty) runs after the
  // comparison succeeded and before the swap: a hook for crash tests.
  virtual Status ReplaceIf(const std::string& path, const std::optional<std::string>& expected,
                           std::string_view bytes, const std::function<void()>& while_locked) = 0;
};

// How remote requests are retried (http/retry_policy.h).
using RetryPolicy = http::RetryPolicy;

// Settings of the remote backends and the cache. Defaults come from COHORT_*
// and AWS_* variables (StorageOptionsFromEnv); docs/configuration.md lists them.
struct StorageOptions {
  RetryPolicy retry;
  int max_in_flight = 16;  // concurrent requests of one ReadMany
  // Cache of immutable objects (chunks/, commits/) under this directory;
  // empty: no cache. Only remote storages are cached.
  std::string cache_dir;
  uint64_t cache_bytes = 10ull << 30;  // LRU eviction keeps the cache below this
  // S3: empty fields fall back to AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
  // AWS_SESSION_TOKEN, AWS_REGION / AWS_DEFAULT_REGION (else us-east-1) and
  // AWS_ENDPOINT_URL (else https://s3.REGION.amazonaws.com).
  std::string s3_endpoint, s3_region, s3_access_key, s3_secret_key, s3_session_token;
};
Result<StorageOptions> StorageOptionsFromEnv();

// A local directory (created when `create`).
Result<std::unique_ptr<Storage>> OpenLocalStorage(const std::string& dir, bool create);
// "http://host/path" or "https://...": read-only; List is not available.
Result<std::unique_ptr<Storage>> OpenHttpStorage(const std::string& url,
                                                 const StorageOptions& options);
// "s3://bucket/prefix", path-style requests to the endpoint, signed with SigV4.
Result<std::unique_ptr<Storage>> OpenS3Storage(const std::string& url,
                                               const StorageOptions& options);

// Picks the backend from the location's scheme (data/storage_backends.h:
// "http://", "https://", "s3://", or a local path, "file://" optional; an
// unknown scheme is refused, listing the known ones); remote ones get the
// cache when options.cache_dir is set. The first form takes its options
// from the environment.
Result<std::unique_ptr<Storage>> OpenStorage(const std::string& location, bool create);
Result<std::unique_ptr<Storage>> OpenStorage(const std::string& location, bool create,
                                             const StorageOptions& options);

// The Status ReplaceIf returns when the key no longer holds what was expected.
Status ConflictError(const std::string& message);
// A key's content for a conflict message: 'text' without the newline, or "none".
std::string QuoteContent(const std::optional<std::string>& content);

}  // namespace cohort::data

#endif  // COHORT_DATA_STORAGE_H_
