// ArtifactStore, both kinds (a local folder walked without following links,
// and the dataset Storage behind s3://, here over a local folder): the same
// contract for spooled uploads, listings, reads and folder deletes; and the
// local one's refusal to go through a symlink (issue 25 item 13).
#include "artifacts/artifact_store.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data/data_test_util.h"

namespace cohort::artifacts {
namespace {

using cohort::data::testing::TempDir;

std::string Content(const ArtifactContent& c) {
  if (!c.file) return c.bytes;
  std::string out(c.file->size, '\0');
  EXPECT_EQ(::pread(c.file->fd.get(), out.data(), out.size(), 0), static_cast<ssize_t>(out.size()));
  return out;
}

void CheckContract(ArtifactStore& store) {
  auto upload = http::SpooledFile::Create(store.spool_dir());
  ASSERT_TRUE(upload.ok()) << upload.status().ToString();
  ASSERT_TRUE((*upload)->Append("weights").ok());
  ASSERT_TRUE(store.Write("1/run/artifacts/model/w.bin", upload->get(), "").ok());
  ASSERT_TRUE(store.Write("1/run/artifacts/notes.txt", nullptr, "hello").ok());
  auto listed = store.List("1/run/artifacts");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].name, "model");
  EXPECT_TRUE((*listed)[0].is_dir);
  EXPECT_EQ((*listed)[1].name, "notes.txt");
  EXPECT_EQ((*listed)[1].size, 5);
  auto read = store.Read("1/run/artifacts/model/w.bin");
  ASSERT_TRUE(read.ok() && read->has_value());
  EXPECT_EQ(Content(**read), "weights");
  auto missing = store.Read("1/run/artifacts/none");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  ASSERT_TRUE(store.Delete("1/run/artifacts/model").ok());
  ASSERT_TRUE(store.Delete("1/run/artifacts/model").ok());  // absent: no error
  read = store.Read("1/run/artifacts/model/w.bin");
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(read->has_value());
  listed = store.List("1/run/artifacts");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name, "notes.txt");
  // The spooled file is gone once its request is (moved into place, or removed).
  std::string spooled = (*upload)->path();
  upload->reset();
  EXPECT_FALSE(std::filesystem::exists(spooled)) << spooled;
}

TEST(ArtifactStore, LocalFolder) {
  TempDir dir;
  auto store = OpenArtifactStore("file://" + dir.Sub("artifacts"));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  CheckContract(**store);
}

TEST(ArtifactStore, DatasetStorage) {
  TempDir dir;
  auto store = OpenStorageArtifactStore(dir.Sub("artifacts"));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  CheckContract(**store);
}

TEST(ArtifactStore, LocalFolderNeverGoesThroughALink) {
  TempDir dir;
  std::filesystem::create_directories(dir.Sub("outside"));
  std::ofstream(dir.Sub("outside/secret")) << "keep";
  auto store = OpenLocalArtifactStore(dir.Sub("artifacts"));
  ASSERT_TRUE(store.ok());
  std::filesystem::create_directory_symlink(dir.Sub("outside"), dir.Sub("artifacts/link"));
  auto read = (*store)->Read("link/secret");
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(read->has_value());
  EXPECT_TRUE((*store)->List("link")->empty());
  Status put = (*store)->Write("link/new", nullptr, "x");
  EXPECT_EQ(put.message(),
            "Invalid artifact path 'link/new': 'link/new' goes through link, a symlink");
  ASSERT_TRUE((*store)->Delete("link/secret").ok());
  ASSERT_TRUE((*store)->Delete("link").ok());  // the link goes, not what it points to
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(dir.Sub("artifacts/link"))));
  std::ifstream in(dir.Sub("outside/secret"));
  std::string kept;
  in >> kept;
  EXPECT_EQ(kept, "keep");
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("outside/new")));
}

}  // namespace
}  // namespace cohort::artifacts
