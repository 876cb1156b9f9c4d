// Storage::Delete (what checkpoint garbage collection needs): the local
// backend removes the object and the folder it leaves empty, deleting an
// absent object is fine, and read-only HTTP storage refuses naming itself.
#include <gtest/gtest.h>

#include <filesystem>

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

TEST(StorageDelete, HttpStorageRefuses) {
  auto storage = OpenHttpStorage("http://127.0.0.1:9/ds", StorageOptions{});
  ASSERT_TRUE(storage.ok()) << storage.status().ToString();
  Status status = (*storage)->Delete("x");
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(status.message(), "dataset http://127.0.0.1:9/ds: this storage cannot remove x");
}

}  // namespace
}  // namespace cohort::data
