// Damaged storage: a corrupted, truncated or missing chunk fails the read
// with an error naming the dataset, the commit and the chunk; other chunks
// stay readable; `verify` (API and CLI) finds every problem.
#include <gtest/gtest.h>

#include <filesystem>

#include "cohort/data.h"
#include "data/data_test_util.h"
#include "data/repository.h"
#include "support/child_process.h"

namespace cohort::data {
namespace {

using testing::FloatSample;
using testing::FloatSchema;
using testing::TempDir;

struct Damaged {
  std::string loc, commit, chunk, chunk_path;
};

// A dataset of 40 samples in 10 chunks; returns which chunk holds sample 17.
Damaged MakeDataset(const TempDir& dir, Compression c) {
  Damaged d;
  d.loc = dir.Sub("ds");
  WriterOptions options;
  options.chunk_bytes = 4 * 64 - 1;
  options.compression = c;
  auto w = Writer::Create(d.loc, FloatSchema(), options);
  EXPECT_TRUE(w.ok());
  for (int i = 0; i < 40; ++i) EXPECT_TRUE((*w)->Append(FloatSample(static_cast<float>(i))).ok());
  auto id = (*w)->Commit({"forty"});
  EXPECT_TRUE(id.ok());
  d.commit = *id;
  auto repo = Repository::Open(d.loc);
  auto commit = (*repo)->LoadCommit(d.commit);
  EXPECT_EQ(commit->chunks.size(), 10u);
  d.chunk = commit->chunks[4].id;  // samples 16..19
  d.chunk_path = d.loc + "/" + Repository::ObjectKey("chunks", d.chunk);
  return d;
}

void ExpectNamed(const Status& s, const Damaged& d, const std::string& what) {
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(d.loc), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("commit " + d.commit), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("chunk " + d.chunk), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
}

void ExpectOthersReadable(Dataset& ds) {
  EXPECT_TRUE(ds.Get(0).ok());
  EXPECT_TRUE(ds.Get(15).ok());
  EXPECT_TRUE(ds.Get(20).ok());
  EXPECT_TRUE(ds.Get(39).ok());
}

void ExpectVerifyFinds(const Damaged& d, const std::string& what) {
  auto report = Verify(d.loc);
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->problems.size(), 1u);
  EXPECT_NE(report->problems[0].find(d.chunk), std::string::npos) << report->problems[0];
  EXPECT_NE(report->problems[0].find(what), std::string::npos) << report->problems[0];
  cohort::testing::Finished cli = cohort::testing::RunCohort({"data", "verify", "-d", d.loc}, 30);
  EXPECT_EQ(cli.exit_code, 1) << cli.out << cli.err;
  EXPECT_TRUE(cohort::testing::Contains(cli.out, d.chunk)) << cli.out;
}

class Corruption : public ::testing::TestWithParam<Compression> {};

TEST_P(Corruption, FlippedByteIsACheckedError) {
  TempDir dir;
  Damaged d = MakeDataset(dir, GetParam());
  std::string bytes = testing::ReadFile(d.chunk_path);
  bytes[bytes.size() / 2 + 20] ^= 0x40;
  testing::WriteFile(d.chunk_path, bytes);
  auto ds = Dataset::Open(d.loc);
  ASSERT_TRUE(ds.ok());
  ExpectNamed((*ds)->Get(17).status(), d, "checksum mismatch");
  ExpectOthersReadable(**ds);
  ExpectVerifyFinds(d, "SHA-256");
}

TEST_P(Corruption, TruncatedChunkIsAnError) {
  TempDir dir;
  Damaged d = MakeDataset(dir, GetParam());
  std::filesystem::resize_file(d.chunk_path, std::filesystem::file_size(d.chunk_path) - 7);
  auto ds = Dataset::Open(d.loc);
  ASSERT_TRUE(ds.ok());
  ExpectNamed((*ds)->Get(16).status(), d, "truncated");
  ExpectOthersReadable(**ds);
  ExpectVerifyFinds(d, "truncated");
}

TEST_P(Corruption, MissingChunkIsAnError) {
  TempDir dir;
  Damaged d = MakeDataset(dir, GetParam());
  std::filesystem::remove(d.chunk_path);
  auto ds = Dataset::Open(d.loc);
  ASSERT_TRUE(ds.ok());
  ExpectNamed((*ds)->Get(19).status(), d, "missing");
  ExpectOthersReadable(**ds);
  ExpectVerifyFinds(d, "missing");
  // Diff must read that chunk too, and says so.
  ExpectNamed(Diff(d.loc, "HEAD~1", "HEAD").status(), d, "missing");
}

INSTANTIATE_TEST_SUITE_P(Compressions, Corruption,
                         ::testing::Values(Compression::kNone, Compression::kZstd,
                                           Compression::kLz4),
                         [](const auto& info) { return std::string(CompressionName(info.param)); });

TEST(DataCorruption, DamagedCommitOrRefIsAnError) {
  TempDir dir;
  Damaged d = MakeDataset(dir, Compression::kNone);
  std::string commit_path = d.loc + "/" + Repository::ObjectKey("commits", d.commit);
  std::string bytes = testing::ReadFile(commit_path);
  bytes[10] ^= 1;
  testing::WriteFile(commit_path, bytes);
  auto ds = Dataset::Open(d.loc);
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("commit " + d.commit), std::string::npos)
      << ds.status().message();
  testing::WriteFile(d.loc + "/refs/heads/main", "garbage\n");
  auto again = Dataset::Open(d.loc);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("refs/heads/main"), std::string::npos)
      << again.status().message();
}

}  // namespace
}  // namespace cohort::data
