// The local cache in front of a storage: hits and misses, which keys are
// cached, LRU eviction at the size limit, recency kept across reopening, and
// that a write killed midway never becomes an entry.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "data/data_test_util.h"
#include "data/storage.h"
#include "data/storage_cache.h"

namespace cohort::data {
namespace {

using testing::TempDir;

// A local storage that counts the reads reaching it.
class CountingStorage : public Storage {
 public:
  explicit CountingStorage(std::unique_ptr<Storage> inner) : inner_(std::move(inner)) {}
  const std::string& location() const override { return inner_->location(); }
  Result<std::optional<std::string>> Get(const std::string& path) override {
    ++(*reads_)[path];
    return inner_->Get(path);
  }
  Result<std::string> Read(const std::string& path, uint64_t offset, uint64_t len) override {
    ++(*reads_)[path];
    return inner_->Read(path, offset, len);
  }
  Result<bool> Exists(const std::string& path) override { return inner_->Exists(path); }
  Status Put(const std::string& path, std::string_view bytes) override {
    return inner_->Put(path, bytes);
  }
  Result<std::vector<std::string>> List(const std::string& prefix) override {
    return inner_->List(prefix);
  }
  Status ReplaceIf(const std::string& path, const std::optional<std::string>& expected,
                   std::string_view bytes, const std::function<void()>& hook) override {
    return inner_->ReplaceIf(path, expected, bytes, hook);
  }
  // Shared with the test, which keeps it after the cache took ownership.
  std::shared_ptr<std::map<std::string, int>> reads_ =
      std::make_shared<std::map<std::string, int>>();

 private:
  std::unique_ptr<Storage> inner_;
};

class StorageCache : public ::testing::Test {
 protected:
  void SetUp() override {
    auto local = OpenLocalStorage(dir_.Sub("remote"), true);
    ASSERT_TRUE(local.ok());
    remote_ = local->get();
    remote_owner_ = std::move(*local);
    // Each object is 100 copies of its key's last letter.
    for (std::string key : {"chunks/aa/a", "chunks/bb/b", "chunks/cc/c", "commits/dd/d"})
      ASSERT_TRUE(remote_->Put(key, std::string(100, key.back())).ok());
    ASSERT_TRUE(remote_->Put("refs/heads/main", "ref\n").ok());
  }

  // A cache over the remote directory, limited to `limit` bytes.
  std::unique_ptr<CachedStorage> OpenCache(uint64_t limit) {
    auto counting =
        std::make_unique<CountingStorage>(OpenLocalStorage(dir_.Sub("remote"), false).value());
    reads_ = counting->reads_;
    StorageOptions o;
    o.cache_dir = dir_.Sub("cache");
    o.cache_bytes = limit;
    auto cache = CachedStorage::Open(std::move(counting), o);
    EXPECT_TRUE(cache.ok()) << cache.status().ToString();
    return cache.ok() ? std::move(*cache) : nullptr;
  }
  bool Cached(const std::string& key) { return std::filesystem::exists(dir_.Sub("cache/" + key)); }

  TempDir dir_;
  Storage* remote_ = nullptr;
  std::unique_ptr<Storage> remote_owner_;
  std::shared_ptr<std::map<std::string, int>> reads_;
};

TEST_F(StorageCache, HitsMissesAndWhatIsCached) {
  auto cache = OpenCache(1 << 20);
  EXPECT_EQ(**cache->Get("chunks/aa/a"), std::string(100, 'a'));
  EXPECT_EQ(**cache->Get("chunks/aa/a"), std::string(100, 'a'));
  EXPECT_EQ(*cache->Read("chunks/aa/a", 90, 50), std::string(10, 'a'));
  EXPECT_EQ((*reads_)["chunks/aa/a"], 1);
  EXPECT_EQ(*cache->Read("commits/dd/d", 10, 5), "ddddd") << "a miss on a range read";
  EXPECT_EQ(**cache->Get("commits/dd/d"), std::string(100, 'd'));
  EXPECT_EQ((*reads_)["commits/dd/d"], 1);
  cache->Get("refs/heads/main");
  cache->Get("refs/heads/main");
  EXPECT_EQ((*reads_)["refs/heads/main"], 2) << "refs are not cached: they change";
  EXPECT_FALSE(Cached("refs/heads/main"));
  EXPECT_FALSE(cache->Get("chunks/ee/absent")->has_value());
  EXPECT_FALSE(Cached("chunks/ee/absent"));
  CacheStats stats = cache->stats();
  EXPECT_EQ(stats.hits, 3u);
  EXPECT_EQ(stats.misses, 3u);
  EXPECT_EQ(stats.entries, 2u);
  EXPECT_EQ(stats.bytes, 200u);
  Result<std::vector<std::string>> many =
      cache->ReadMany({{"chunks/aa/a", 0, 3}, {"chunks/bb/b", 5, 2}, {"chunks/bb/b", 98, 9}});
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(*many, std::vector<std::string>({"aaa", "bb", "bb"}));
  EXPECT_EQ((*reads_)["chunks/bb/b"], 1) << "two ranges of one missing object: one fetch";
}

TEST_F(StorageCache, EvictsLeastRecentlyUsedAtTheLimit) {
  auto cache = OpenCache(250);  // two 100-byte entries fit, three do not
  cache->Get("chunks/aa/a");
  cache->Get("chunks/bb/b");
  cache->Get("chunks/aa/a");  // a is now more recent than b
  cache->Get("chunks/cc/c");
  EXPECT_TRUE(Cached("chunks/aa/a"));
  EXPECT_FALSE(Cached("chunks/bb/b")) << "the least recently used entry goes";
  EXPECT_TRUE(Cached("chunks/cc/c"));
  EXPECT_EQ(cache->stats().evictions, 1u);
  EXPECT_EQ(cache->stats().bytes, 200u);
  cache->Get("chunks/bb/b");
  EXPECT_EQ((*reads_)["chunks/bb/b"], 2) << "evicted, so fetched again";
  EXPECT_FALSE(Cached("chunks/aa/a"));
  auto tiny = OpenCache(50);
  EXPECT_EQ(tiny->stats().entries, 0u) << "reopening with a smaller limit evicts";
  EXPECT_EQ(**tiny->Get("chunks/aa/a"), std::string(100, 'a'));
  EXPECT_FALSE(Cached("chunks/aa/a")) << "an object larger than the cache is not kept";
}

TEST_F(StorageCache, RecencySurvivesReopening) {
  {
    auto cache = OpenCache(1000);
    cache->Get("chunks/aa/a");
    cache->Get("chunks/bb/b");
    // Make a's last use clearly older than b's, as on a real timeline.
    struct timespec old[2] = {{1000, 0}, {1000, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, dir_.Sub("cache/chunks/aa/a").c_str(), old, 0), 0);
  }
  auto cache = OpenCache(250);
  EXPECT_EQ(cache->stats().entries, 2u);
  EXPECT_EQ(**cache->Get("chunks/bb/b"), std::string(100, 'b'));
  EXPECT_EQ((*reads_)["chunks/bb/b"], 0) << "served by the entry the last process wrote";
  cache->Get("chunks/cc/c");
  EXPECT_FALSE(Cached("chunks/aa/a"));
  EXPECT_TRUE(Cached("chunks/bb/b"));
}

TEST_F(StorageCache, AWriteKilledMidwayIsNeverServed) {
  // What a process killed while filling an entry leaves: its temp file, part-written.
  std::filesystem::create_directories(dir_.Sub("cache/chunks/aa"));
  std::filesystem::create_directories(dir_.Sub("cache/chunks/bb"));
  testing::WriteFile(dir_.Sub("cache/chunks/aa/a.tmp.Xy12ab"), std::string(40, 'a'));
  testing::WriteFile(dir_.Sub("cache/chunks/bb/b.tmp.Zz99zz"), "");
  struct timespec old[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, dir_.Sub("cache/chunks/aa/a.tmp.Xy12ab").c_str(), old, 0), 0);
  auto cache = OpenCache(1000);
  EXPECT_EQ(cache->stats().entries, 0u);
  EXPECT_EQ(**cache->Get("chunks/aa/a"), std::string(100, 'a'));
  EXPECT_EQ((*reads_)["chunks/aa/a"], 1);
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("cache/chunks/aa/a.tmp.Xy12ab")))
      << "an old leftover is removed";
  EXPECT_TRUE(std::filesystem::exists(dir_.Sub("cache/chunks/bb/b.tmp.Zz99zz")))
      << "a fresh one may belong to a live writer";
  EXPECT_EQ(testing::ReadFile(dir_.Sub("cache/chunks/aa/a")), std::string(100, 'a'));
}

}  // namespace
}  // namespace cohort::data
