// CachedStorage: a local directory that keeps copies of a remote storage's
// immutable objects (chunks/ and commits/, named by their SHA-256), bounded
// in size with least-recently-used eviction. Refs, HEAD and format always go
// to the remote storage, so a cached dataset still sees new commits.
#ifndef COHORT_DATA_STORAGE_CACHE_H_
#define COHORT_DATA_STORAGE_CACHE_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "data/storage.h"

namespace cohort::data {

struct CacheStats {
  uint64_t hits = 0;       // reads served from the cache directory
  uint64_t misses = 0;     // objects fetched from the inner storage
  uint64_t evictions = 0;  // entries removed to stay within the size limit
  uint64_t bytes = 0;      // bytes held now
  uint64_t entries = 0;
};

class CachedStorage : public Storage {
 public:
  // Uses options.cache_dir (created when missing) and options.cache_bytes.
  // Entries already there count towards the limit, oldest use first; temp
  // files a killed process left behind are removed.
  static Result<std::unique_ptr<CachedStorage>> Open(std::unique_ptr<Storage> inner,
                                                     const StorageOptions& options);

  const std::string& location() const override { return inner_->location(); }
  Result<std::optional<std::string>> Get(const std::string& path) override;
  // A miss fetches and caches the whole object, then returns the range.
  Result<std::string> Read(const std::string& path, uint64_t offset, uint64_t len) override;
  // Misses are fetched in one ReadMany of the inner storage.
  Result<std::vector<std::string>> ReadMany(const std::vector<ByteRange>& ranges) override;
  Result<bool> Exists(const std::string& path) override;
  Status Put(const std::string& path, std::string_view bytes) override;
  Status Delete(const std::string& path) override;
  Result<std::vector<std::string>> List(const std::string& prefix) override;
  Result<std::vector<ListedObject>> ListModified(const std::string& prefix) override;
  Status ReplaceIf(const std::string& path, const std::optional<std::string>& expected,
                   std::string_view bytes, const std::function<void()>& while_locked) override;

  CacheStats stats() const;

 private:
  CachedStorage(std::unique_ptr<Storage> inner, std::unique_ptr<Storage> local, std::string dir,
                uint64_t limit)
      : inner_(std::move(inner)), local_(std::move(local)), dir_(std::move(dir)), limit_(limit) {}

  static bool Cacheable(const std::string& path);
  Status Scan();
  // The cached object, or nullopt on a miss (counted).
  Result<std::optional<std::string>> Lookup(const std::string& path);
  // Writes the entry (temp file, fsync, rename) and evicts down to the limit.
  Status Store(const std::string& path, const std::string& bytes);
  void Remember(const std::string& path, uint64_t size);  // mu_ held
  void EvictToLimit();                                    // mu_ held

  std::unique_ptr<Storage> inner_;
  std::unique_ptr<Storage> local_;  // the cache directory
  std::string dir_;
  uint64_t limit_;

  mutable std::mutex mu_;
  std::list<std::string> lru_;  // most recently used first
  struct Entry {
    uint64_t size;
    std::list<std::string>::iterator at;
  };
  std::map<std::string, Entry> entries_;
  CacheStats stats_;
};

}  // namespace cohort::data

#endif  // COHORT_DATA_STORAGE_CACHE_H_
