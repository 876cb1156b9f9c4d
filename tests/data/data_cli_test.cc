// `cohort data` end to end (the real binary) and the .npy header parser:
// ingest of .npy files written by the test, info, log, diff, checkout,
// verify, and usage errors (exit 2).
#include <gtest/gtest.h>

#include <cstring>

#include "cohort/data.h"
#include "data/data_test_util.h"
#include "data/npy.h"
#include "support/child_process.h"

namespace cohort::data {
namespace {

using cohort::testing::Contains;
using cohort::testing::Finished;
using cohort::testing::RunCohort;
using testing::TempDir;

// Writes a C-order .npy of `rows` x `cols` int32 values (row r holds r*1000 + c).
std::string WriteInt32Npy(const TempDir& dir, const std::string& name, uint64_t rows, uint64_t cols,
                          int32_t offset = 0) {
  std::string bytes = MakeNpyHeader(DataType::kInt32, {rows, cols});
  EXPECT_EQ(bytes.size() % 64, 0u);
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      int32_t v = static_cast<int32_t>(r * 1000 + c) + offset;
      bytes.append(reinterpret_cast<const char*>(&v), 4);
    }
  }
  std::string path = dir.Sub(name);
  testing::WriteFile(path, bytes);
  return path;
}

TEST(DataNpy, ParsesHeadersNumpyWrites) {
  auto v1 = ParseNpyHeader(MakeNpyHeader(DataType::kFloat16, {7, 2, 3}));
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  EXPECT_EQ(v1->dtype, DataType::kFloat16);
  EXPECT_EQ(v1->shape, std::vector<uint64_t>({7, 2, 3}));
  EXPECT_EQ(v1->data_offset % 64, 0u);
  auto one = ParseNpyHeader(MakeNpyHeader(DataType::kUInt8, {5}));
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->shape, std::vector<uint64_t>({5}));
  // Version 2: a 4-byte header length.
  std::string dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (3, 4), }";
  dict.append(64 - (12 + dict.size() + 1) % 64, ' ');
  dict.push_back('\n');
  std::string v2 = std::string("\x93NUMPY\x02\x00", 8);
  uint32_t len = static_cast<uint32_t>(dict.size());
  v2.append(reinterpret_cast<const char*>(&len), 4);
  v2 += dict;
  auto parsed = ParseNpyHeader(v2);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->dtype, DataType::kInt64);
  EXPECT_EQ(parsed->shape, std::vector<uint64_t>({3, 4}));
  EXPECT_EQ(parsed->data_offset, v2.size());
}

TEST(DataNpy, RejectsWhatItCannotIngest) {
  auto replace = [](std::string s, const std::string& from, const std::string& to) {
    return s.replace(s.find(from), from.size(), to);
  };
  std::string good = MakeNpyHeader(DataType::kFloat32, {2, 2});
  EXPECT_FALSE(ParseNpyHeader(replace(good, "<f4", ">f4")).ok()) << "big-endian";
  EXPECT_FALSE(ParseNpyHeader(replace(good, "False", "True ")).ok()) << "Fortran order";
  EXPECT_FALSE(ParseNpyHeader(replace(good, "<f4", "<c8")).ok()) << "complex";
  EXPECT_FALSE(ParseNpyHeader("not numpy at all").ok());
  EXPECT_FALSE(ParseNpyHeader(good.substr(0, 30)).ok()) << "truncated header";
}

TEST(DataCli, IngestInfoLogDiffCheckoutVerify) {
  TempDir dir;
  const std::string ds = dir.Sub("ds");
  const std::string a = WriteInt32Npy(dir, "a.npy", 500, 7);
  Finished ingest = RunCohort({"data", "ingest", "numpy", a, "-d", ds, "--chunk-size", "4K",
                               "--compression", "lz4", "-m", "first", "--author", "ann"});
  ASSERT_EQ(ingest.exit_code, 0) << ingest.err;
  EXPECT_TRUE(Contains(ingest.out, "500 samples")) << ingest.out;

  auto opened = Dataset::Open(ds);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ((*opened)->size(), 500u);
  EXPECT_GT((*opened)->commit().num_chunks, 3u);
  EXPECT_EQ((*opened)->commit().author, "ann");
  EXPECT_TRUE(Contains((*opened)->commit().command, "ingest numpy")) << (*opened)->commit().command;
  auto row = (*opened)->Get(123);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ((*row)[0].shape, std::vector<uint64_t>({7}));
  int32_t v[7];
  std::memcpy(v, (*row)[0].bytes.data(), sizeof v);
  EXPECT_EQ(v[0], 123000);
  EXPECT_EQ(v[6], 123006);

  const std::string b = WriteInt32Npy(dir, "b.npy", 3, 7, -5);
  Finished again = RunCohort({"data", "-d", ds, "ingest", "numpy", b});
  ASSERT_EQ(again.exit_code, 0) << again.err;

  Finished info = RunCohort({"data", "info", "-d", ds});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_TRUE(Contains(info.out, "samples   503")) << info.out;
  EXPECT_TRUE(Contains(info.out, "int32")) << info.out;
  Finished log = RunCohort({"data", "log", "-d", ds});
  EXPECT_EQ(log.exit_code, 0) << log.err;
  EXPECT_TRUE(Contains(log.out, "first")) << log.out;
  EXPECT_TRUE(Contains(log.out, "create dataset")) << log.out;
  Finished diff = RunCohort({"data", "diff", "HEAD~1", "HEAD", "-d", ds});
  EXPECT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_TRUE(Contains(diff.out, "3 added, 0 removed, 0 changed")) << diff.out;
  EXPECT_TRUE(Contains(diff.out, "+ 502")) << diff.out;
  Finished checkout = RunCohort({"data", "checkout", "HEAD~1", "-d", ds});
  EXPECT_EQ(checkout.exit_code, 0) << checkout.err;
  Finished old_info = RunCohort({"data", "info", "-d", ds});
  EXPECT_TRUE(Contains(old_info.out, "samples   500")) << old_info.out;
  Finished back = RunCohort({"data", "checkout", "main", "-d", ds});
  EXPECT_EQ(back.exit_code, 0) << back.err;
  Finished verify = RunCohort({"data", "verify", "-d", ds});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_TRUE(Contains(verify.out, "ok: 3 commits")) << verify.out;

  // The column took the first file's row shape: rows of another length are
  // refused at ingest (the dataset stays as it was); a column declared ragged takes them.
  EXPECT_TRUE(Contains(info.out, "int32   [7]")) << info.out;
  const std::string c = WriteInt32Npy(dir, "c.npy", 2, 9);
  Finished misshapen = RunCohort({"data", "-d", ds, "ingest", "numpy", c});
  EXPECT_EQ(misshapen.exit_code, 1);
  EXPECT_TRUE(Contains(misshapen.err, "invalid argument: " + c +
                                          ", row 0: column 'data': a value of shape [9] does not "
                                          "fit the column's fixed shape [7] (a column declared "
                                          "ragged takes any shape)"))
      << misshapen.err;
  EXPECT_EQ((*Dataset::Open(ds))->size(), 503u);
  const std::string loose = dir.Sub("ragged");
  Finished declared = RunCohort({"data", "-d", loose, "ingest", "numpy", a, "--ragged"});
  ASSERT_EQ(declared.exit_code, 0) << declared.err;
  Finished ragged = RunCohort({"data", "-d", loose, "ingest", "numpy", c});
  EXPECT_EQ(ragged.exit_code, 0) << ragged.err;
  Finished loose_info = RunCohort({"data", "info", "-d", loose});
  EXPECT_TRUE(Contains(loose_info.out, "int32   ragged")) << loose_info.out;
  std::string f = MakeNpyHeader(DataType::kFloat32, {1, 2}) + std::string(8, '\0');
  testing::WriteFile(dir.Sub("f.npy"), f);
  Finished misfit = RunCohort({"data", "-d", ds, "ingest", "numpy", dir.Sub("f.npy")});
  EXPECT_EQ(misfit.exit_code, 1);
  EXPECT_TRUE(Contains(misfit.err, "different schema")) << misfit.err;
  std::string truncated = testing::ReadFile(c);
  testing::WriteFile(c, truncated.substr(0, truncated.size() - 4));
  Finished short_file = RunCohort({"data", "-d", loose, "ingest", "numpy", c});
  EXPECT_EQ(short_file.exit_code, 1);
  EXPECT_TRUE(Contains(short_file.err, "header promises")) << short_file.err;
}

TEST(DataCli, UsageErrorsExitTwo) {
  TempDir dir;
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"data"},
                                             {"data", "frobnicate"},
                                             {"data", "diff", "A"},
                                             {"data", "checkout"},
                                             {"data", "ingest", "tarball", "x"},
                                             {"data", "ingest", "imagefolder"},
                                             {"data", "info", "--bogus"},
                                             {"data", "verify", "-d"},
                                             {"data", "log", "--column", "x"}}) {
    Finished run = RunCohort(args);
    EXPECT_EQ(run.exit_code, 2) << args.back() << ": " << run.err;
    EXPECT_TRUE(Contains(run.err, "usage: cohort data")) << run.err;
  }
  Finished help = RunCohort({"data", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(Contains(help.out, "ingest numpy")) << help.out;
  Finished missing = RunCohort({"data", "info", "-d", dir.Sub("nope")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(Contains(missing.err, dir.Sub("nope"))) << missing.err;
}

}  // namespace
}  // namespace cohort::data
