// CopyDataset between local directories (the S3 round trip is in
// s3_storage_test.cc): refs come last, a rerun resumes, corrupted objects
// are refused, and a destination holding a dataset is left alone.
#include <gtest/gtest.h>

#include <filesystem>

#include "cohort/data.h"
#include "data/data_test_util.h"
#include "data/storage_test_util.h"

namespace cohort::data {
namespace {

using testing::TempDir;

TEST(CopyStorage, RefsLastAndARerunResumes) {
  TempDir dir;
  std::vector<std::string> ids = testing::WriteSmallDataset(dir.Sub("src"));
  CopyOptions options;
  uint64_t last_done = 0;
  options.on_progress = [&](const CopyProgress& p) {
    EXPECT_GT(p.objects_done, last_done);
    last_done = p.objects_done;
  };
  Result<CopyResult> first = CopyDataset(dir.Sub("src"), dir.Sub("dst"), options);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->skipped, 0u);
  testing::ExpectSmallDataset(dir.Sub("dst"), ids[1]);

  // What a copy that stopped before its refs leaves: not a dataset yet.
  std::filesystem::remove_all(dir.Sub("dst/refs"));
  EXPECT_FALSE(Dataset::Open(dir.Sub("dst")).ok());
  Result<CopyResult> again = CopyDataset(dir.Sub("src"), dir.Sub("dst"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->skipped + again->copied, first->copied);
  EXPECT_EQ(again->copied, 4u) << "format, HEAD and the two refs (main, v1)";
  testing::ExpectSmallDataset(dir.Sub("dst"), ids[1]);
  EXPECT_EQ(last_done, first->copied);

  Result<CopyResult> onto_dataset = CopyDataset(dir.Sub("src"), dir.Sub("dst"));
  ASSERT_FALSE(onto_dataset.ok());
  EXPECT_NE(onto_dataset.status().message().find("already holds a dataset (refs/heads/main)"),
            std::string::npos)
      << onto_dataset.status().message();
}

TEST(CopyStorage, CorruptedSourceObjectIsRefused) {
  TempDir dir;
  testing::WriteSmallDataset(dir.Sub("src"));
  std::string victim;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.Sub("src/chunks")))
    if (e.is_regular_file()) victim = e.path().string();
  ASSERT_FALSE(victim.empty());
  std::string bytes = testing::ReadFile(victim);
  bytes[bytes.size() / 2] ^= 1;
  testing::WriteFile(victim, bytes);
  Result<CopyResult> copy = CopyDataset(dir.Sub("src"), dir.Sub("dst"));
  ASSERT_FALSE(copy.ok());
  const std::string key = victim.substr(dir.Sub("src/").size());
  EXPECT_EQ(copy.status().message(), "dataset " + dir.Sub("src") + ": object " + key +
                                         " does not match its SHA-256 (corrupted); run cohort "
                                         "data verify");
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("dst/refs"))) << "no ref was copied";
  Result<CopyResult> not_dataset = CopyDataset(dir.Sub("dst"), dir.Sub("other"));
  ASSERT_FALSE(not_dataset.ok());
  EXPECT_NE(not_dataset.status().message().find("not a cohort dataset"), std::string::npos);
}

}  // namespace
}  // namespace cohort::data
