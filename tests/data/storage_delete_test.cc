// Storage::Delete (what checkpoint garbage collection needs): the local
// backend removes the object and the folder it leaves empty, deleting an
// absent object is fine, writers and deleters racing over one folder never
// fail, and read-only HTTP storage refuses naming itself.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

#include "data/data_test_util.h"
#include "data/storage.h"

namespace cohort::data {
namespace {

using testing::TempDir;

TEST(StorageDelete, LocalRemovesTheObjectAndItsEmptyFolder) {
  TempDir dir;
  auto storage = OpenLocalStorage(dir.Sub("s"), true);
  ASSERT_TRUE(storage.ok());
  ASSERT_TRUE((*storage)->Put("a/one", "1").ok());
  ASSERT_TRUE((*storage)->Put("a/two", "2").ok());
  ASSERT_TRUE((*storage)->Delete("a/one").ok());
  EXPECT_EQ(*(*storage)->List(""), (std::vector<std::string>{"a/two"}));
  EXPECT_TRUE(std::filesystem::exists(dir.Sub("s/a")));
  ASSERT_TRUE((*storage)->Delete("a/two").ok());
  EXPECT_TRUE((*storage)->List("")->empty());
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("s/a")));
  EXPECT_TRUE((*storage)->Delete("a/two").ok()) << "deleting twice is fine";
  EXPECT_TRUE((*storage)->Delete("never/was").ok());
}

// Each thread puts and deletes its own object in one shared folder, so a
// Delete keeps removing the folder another thread's Put is about to write
// into (as writers' leases do in a dataset's leases/ folder).
TEST(StorageDelete, PutsAndDeletesRacingOverOneFolderNeverFail) {
  TempDir dir;
  auto storage = OpenLocalStorage(dir.Sub("s"), true);
  ASSERT_TRUE(storage.ok());
  std::atomic<int> failures{0};
  std::string first_failure;
  std::mutex mu;
  auto work = [&](int id) {
    const std::string key = "leases/" + std::to_string(id);
    for (int i = 0; i < 300; ++i) {
      for (const Status& s : {(*storage)->Put(key, "x"), (*storage)->Delete(key)}) {
        if (s.ok()) continue;
        std::lock_guard<std::mutex> lock(mu);
        if (failures++ == 0) first_failure = s.ToString();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int id = 0; id < 4; ++id) threads.emplace_back(work, id);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0) << first_failure;
  EXPECT_TRUE((*storage)->List("")->empty());
}

TEST(StorageDelete, HttpStorageRefuses) {
  auto storage = OpenHttpStorage("http://127.0.0.1:9/ds", StorageOptions{});
  ASSERT_TRUE(storage.ok()) << storage.status().ToString();
  Status status = (*storage)->Delete("x");
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(status.message(), "dataset http://127.0.0.1:9/ds: this storage cannot remove x");
}

}  // namespace
}  // namespace cohort::data
