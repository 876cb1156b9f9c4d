// `cohort data ingest imagefolder`: a class-per-folder tree round-trips into
// image + label samples in torchvision's order, in parallel, with progress;
// a broken image fails the ingest naming the file and leaves the dataset
// as it was (or absent).
#include <gtest/gtest.h>

#include <filesystem>

#include "cohort/data.h"
#include "data/data_test_util.h"
#include "data/jpeg.h"
#include "support/child_process.h"

namespace cohort::data {
namespace {

using cohort::testing::Contains;
using cohort::testing::RunCohort;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

std::string SmallJpeg(int seed) {
  Image image;
  image.width = 8 + seed % 5;
  image.height = 8;
  image.pixels.assign(size_t(image.width) * 8 * 3, uint8_t(seed * 13));
  return *EncodeJpeg(image, 90);
}

// classes b, a, c (listed in that order on purpose) with 3, 2, 4 images.
std::vector<std::pair<std::string, int>> MakeFolder(const std::string& root) {
  std::vector<std::pair<std::string, int>> expected;  // file, label in ingest order
  const std::vector<std::pair<std::string, int>> classes = {{"b", 3}, {"a", 2}, {"c", 4}};
  int seed = 0;
  for (const auto& [name, count] : classes) {
    std::filesystem::create_directories(root + "/" + name);
    for (int i = count - 1; i >= 0; --i) {
      WriteFile(root + "/" + name + "/img" + std::to_string(i) + ".JPG", SmallJpeg(seed++));
    }
  }
  WriteFile(root + "/a/notes.txt", "not an image");
  for (const char* name : {"a", "b", "c"}) {
    const int count = name[0] == 'a' ? 2 : name[0] == 'b' ? 3 : 4;
    for (int i = 0; i < count; ++i)
      expected.push_back({root + "/" + name + "/img" + std::to_string(i) + ".JPG", name[0] - 'a'});
  }
  return expected;
}

TEST(ImageFolderIngestTest, RoundTripsInClassThenFileOrder) {
  TempDir dir;
  const auto expected = MakeFolder(dir.Sub("tree"));
  auto run = RunCohort({"data", "ingest", "imagefolder", dir.Sub("tree"), dir.Sub("ds"),
                        "--threads", "3", "--chunk-size", "1K"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(Contains(run.out, "created dataset with 9 images in 3 classes")) << run.out;
  EXPECT_TRUE(Contains(run.out, "skipped 1 files")) << run.out;
  EXPECT_TRUE(Contains(run.err, "ingest: 9/9 images")) << run.err;
  auto ds = Dataset::Open(dir.Sub("ds"));
  ASSERT_TRUE(ds.ok());
  ASSERT_EQ((*ds)->size(), expected.size());
  EXPECT_GT((*ds)->commit().num_chunks, 1u);
  EXPECT_EQ((*ds)->commit().message,
            "ingest imagefolder " + dir.Sub("tree") + ": 3 classes: a, b, c");
  ASSERT_EQ((*ds)->schema().size(), 2u);
  EXPECT_EQ((*ds)->schema()[0].kind, ColumnKind::kImage);
  EXPECT_EQ((*ds)->schema()[1].kind, ColumnKind::kLabel);
  for (size_t i = 0; i < expected.size(); ++i) {
    Sample s = *(*ds)->Get(i);
    EXPECT_EQ(s[0].bytes, ReadFile(expected[i].first)) << "sample " << i;
    EXPECT_EQ(s[1].label(), expected[i].second) << "sample " << i;
  }
  // A second ingest appends to the same dataset.
  auto again = RunCohort({"data", "ingest", "imagefolder", dir.Sub("tree"), "-d", dir.Sub("ds")});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ((*Dataset::Open(dir.Sub("ds")))->size(), 18u);
}

TEST(ImageFolderIngestTest, ABrokenImageFailsNamingTheFile) {
  TempDir dir;
  MakeFolder(dir.Sub("tree"));
  WriteFile(dir.Sub("tree") + "/c/broken.jpg", "this is no jpeg");
  auto run = RunCohort({"data", "ingest", "imagefolder", dir.Sub("tree"), dir.Sub("ds")});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(Contains(run.err, dir.Sub("tree") +
                                    "/c/broken.jpg: not a JPEG or PNG image: starts with 0x74 "
                                    "0x68 0x69 0x73"))
      << run.err;
  // A failed first ingest leaves no dataset behind, not even its creation.
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("ds")));
  auto empty = RunCohort({"data", "ingest", "imagefolder", dir.Sub("tree") + "/a", dir.Sub("x")});
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_TRUE(Contains(empty.err, "has no class folders (expected DIR/CLASS/IMAGE)")) << empty.err;
  auto missing = RunCohort({"data", "ingest", "imagefolder", dir.Sub("nope"), dir.Sub("x")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err,
            "cohort data: invalid argument: " + dir.Sub("nope") + " is not a directory\n");
}

TEST(ImageFolderIngestTest, AFailedLaterIngestLeavesTheDatasetAsItWas) {
  TempDir dir;
  MakeFolder(dir.Sub("tree"));
  auto first = RunCohort({"data", "ingest", "imagefolder", dir.Sub("tree"), dir.Sub("ds")});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto before = Log(dir.Sub("ds"));
  ASSERT_TRUE(before.ok());
  WriteFile(dir.Sub("tree") + "/c/truncated.png", "\x89PNG\r\n\x1a\n");
  auto run = RunCohort({"data", "ingest", "imagefolder", dir.Sub("tree"), dir.Sub("ds")});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(Contains(run.err, "/c/truncated.png: not a readable PNG image")) << run.err;
  auto after = Log(dir.Sub("ds"));
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), before->size());
  EXPECT_EQ(after->front().id, before->front().id);
  EXPECT_EQ(testing::CountObjects(dir.Sub("ds"), "chunks"),
            before->front().num_chunks);  // and no chunk written for nothing
}

}  // namespace
}  // namespace cohort::data
