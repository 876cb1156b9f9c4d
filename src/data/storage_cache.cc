// The local cache of immutable objects. Entries are written through a local
// Storage (temp file, fsync, rename), so a process killed mid-write leaves a
// temp file that is never served, never a short entry; Open removes such
// leftovers once they are old enough not to belong to a live writer.
// Recency survives restarts through the entries' modification times.
#include "data/storage_cache.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

namespace cohort::data {

namespace {

namespace fs = std::filesystem;

// A temp file untouched this long belongs to a writer that died.
constexpr auto kStaleTempAge = std::chrono::minutes(10);

std::string Slice(const std::string& bytes, uint64_t offset, uint64_t len) {
  if (offset >= bytes.size()) return std::string();
  return bytes.substr(offset, len == kToEnd ? std::string::npos : len);
}

}  // namespace

Result<std::unique_ptr<CachedStorage>> CachedStorage::Open(std::unique_ptr<Storage> inner,
                                                           const StorageOptions& options) {
  if (options.cache_dir.empty()) return Status::InvalidArgument("no cache directory given");
  Result<std::unique_ptr<Storage>> local = OpenLocalStorage(options.cache_dir, true);
  if (!local.ok()) return local.status().WithContext("cache");
  std::unique_ptr<CachedStorage> cache(new CachedStorage(std::move(inner), std::move(*local),
                                                         options.cache_dir, options.cache_bytes));
  COHORT_RETURN_IF_ERROR(cache->Scan());
  return cache;
}

bool CachedStorage::Cacheable(const std::string& path) {
  return path.rfind("chunks/", 0) == 0 || path.rfind("commits/", 0) == 0;
}

Status CachedStorage::Scan() {
  struct Found {
    fs::file_time_type time;
    std::string key;
    uint64_t size;
  };
  std::vector<Found> found;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (auto it = fs::recursive_directory_iterator(dir_, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const std::string key = fs::relative(it->path(), dir_).string();
    const fs::file_time_type time = it->last_write_time();
    if (key.find(".tmp.") != std::string::npos) {
      if (now - time > kStaleTempAge) fs::remove(it->path(), ec);
      ec.clear();
      continue;
    }
    if (Cacheable(key)) found.push_back({time, key, static_cast<uint64_t>(it->file_size())});
  }
  if (ec) return Status::IoError("cache " + dir_ + ": cannot scan: " + ec.message());
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.time < b.time; });
  std::lock_guard<std::mutex> lock(mu_);
  for (const Found& f : found) Remember(f.key, f.size);  // newest ends up first
  EvictToLimit();
  return Status::OK();
}

void CachedStorage::Remember(const std::string& path, uint64_t size) {
  auto it = entries_.find(path);
  if (it != entries_.end()) {
    lru_.erase(it->second.at);
    stats_.bytes -= it->second.size;
    entries_.erase(it);
  }
  lru_.push_front(path);
  entries_[path] = Entry{size, lru_.begin()};
  stats_.bytes += size;
  stats_.entries = entries_.size();
}

void CachedStorage::EvictToLimit() {
  while (stats_.bytes > limit_ && !lru_.empty()) {
    const std::string victim = lru_.back();
    lru_.pop_back();
    stats_.bytes -= entries_[victim].size;
    entries_.erase(victim);
    std::error_code ec;
    fs::remove(dir_ + "/" + victim, ec);  // a reader that has it open keeps its copy
    ++stats_.evictions;
  }
  stats_.entries = entries_.size();
}

Result<std::optional<std::string>> CachedStorage::Lookup(const std::string& path) {
  const std::string file = dir_ + "/" + path;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(path);
    if (it == entries_.end()) {
      ++stats_.misses;
      return std::optional<std::string>();
    }
    lru_.splice(lru_.begin(), lru_, it->second.at);
    ++stats_.hits;
  }
  ::utimensat(AT_FDCWD, file.c_str(), nullptr, 0);  // recency for the next process
  Result<std::optional<std::string>> bytes = local_->Get(path);
  if (bytes.ok() && !*bytes) {  // another process evicted it: a miss after all
    std::lock_guard<std::mutex> lock(mu_);
    --stats_.hits;
    ++stats_.misses;
  }
  return bytes;
}

Status CachedStorage::Store(const std::string& path, const std::string& bytes) {
  if (bytes.size() > limit_) return Status::OK();  // would evict everything, itself included
  COHORT_RETURN_IF_ERROR(local_->Put(path, bytes));
  std::lock_guard<std::mutex> lock(mu_);
  Remember(path, bytes.size());
  EvictToLimit();
  return Status::OK();
}

Result<std::optional<std::string>> CachedStorage::Get(const std::string& path) {
  if (!Cacheable(path)) return inner_->Get(path);
  Result<std::optional<std::string>> cached = Lookup(path);
  if (!cached.ok() || *cached) return cached;
  Result<std::optional<std::string>> bytes = inner_->Get(path);
  if (bytes.ok() && *bytes) COHORT_RETURN_IF_ERROR(Store(path, **bytes));
  return bytes;
}

Result<std::string> CachedStorage::Read(const std::string& path, uint64_t offset, uint64_t len) {
  Result<std::vector<std::string>> one = ReadMany({{path, offset, len}});
  if (!one.ok()) return one.status();
  return std::move((*one)[0]);
}

Result<std::vector<std::string>> CachedStorage::ReadMany(const std::vector<ByteRange>& ranges) {
  std::vector<std::string> out(ranges.size());
  std::map<std::string, std::vector<size_t>> missing;  // path -> indices into ranges
  std::vector<ByteRange> passthrough;
  std::vector<size_t> passthrough_at;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const ByteRange& r = ranges[i];
    if (!Cacheable(r.path)) {
      passthrough.push_back(r);
      passthrough_at.push_back(i);
      continue;
    }
    if (missing.count(r.path)) {
      missing[r.path].push_back(i);
      continue;
    }
    Result<std::optional<std::string>> cached = Lookup(r.path);
    if (!cached.ok()) return cached.status();
    if (*cached) {
      out[i] = Slice(**cached, r.offset, r.len);
    } else {
      missing[r.path].push_back(i);
    }
  }
  std::vector<ByteRange> fetch = passthrough;
  for (const auto& [path, at] : missing) fetch.push_back({path, 0, kToEnd});
  if (fetch.empty()) return out;
  Result<std::vector<std::string>> fetched = inner_->ReadMany(fetch);
  if (!fetched.ok()) return fetched.status();
  for (size_t k = 0; k < passthrough.size(); ++k) out[passthrough_at[k]] = std::move((*fetched)[k]);
  size_t k = passthrough.size();
  for (const auto& [path, at] : missing) {
    const std::string& whole = (*fetched)[k++];
    COHORT_RETURN_IF_ERROR(Store(path, whole));
    for (size_t i : at) out[i] = Slice(whole, ranges[i].offset, ranges[i].len);
  }
  return out;
}

Result<bool> CachedStorage::Exists(const std::string& path) {
  if (Cacheable(path)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.count(path)) return true;
  }
  return inner_->Exists(path);
}

Status CachedStorage::Put(const std::string& path, std::string_view bytes) {
  return inner_->Put(path, bytes);
}

// Only immutable objects are cached, and only unreferenced ones are removed
// (gc, checkpoint pruning), which no reader asks for: a cached copy can stay
// until the LRU evicts it.
Status CachedStorage::Delete(const std::string& path) { return inner_->Delete(path); }

Result<std::vector<std::string>> CachedStorage::List(const std::string& prefix) {
  return inner_->List(prefix);
}

Result<std::vector<ListedObject>> CachedStorage::ListModified(const std::string& prefix) {
  return inner_->ListModified(prefix);
}

Status CachedStorage::ReplaceIf(const std::string& path, const std::optional<std::string>& expected,
                                std::string_view bytes, const std::function<void()>& while_locked) {
  return inner_->ReplaceIf(path, expected, bytes, while_locked);
}

CacheStats CachedStorage::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace cohort::data
