// Dataset format round trips: every column kind and dtype, ragged shapes,
// every compression, random access across chunk boundaries, schema checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "cohort/data.h"
#include "data/chunk.h"
#include "data/commit_object.h"
#include "data/data_test_util.h"
#include "data/repository.h"

namespace cohort::data {
namespace {

using testing::FloatSchema;
using testing::TempDir;

// One column per kind plus one array column per dtype.
Schema FullSchema() {
  Schema schema = {{"image", ColumnKind::kImage},
                   {"caption", ColumnKind::kText},
                   {"label", ColumnKind::kLabel},
                   {"meta", ColumnKind::kJson}};
  for (int t = 0; t < kNumDataTypes; ++t) {
    DataType dtype = static_cast<DataType>(t);
    schema.push_back({std::string("a_") + DataTypeName(dtype), ColumnKind::kArray, dtype});
  }
  return schema;
}

// Sample i: deterministic contents, ragged shapes (including empty and scalar ones).
Sample MakeSample(const Schema& schema, uint64_t i) {
  std::mt19937_64 rng(i);
  Sample s;
  std::string image(100 + i % 37, '\0');
  for (char& c : image) c = static_cast<char>(rng());
  s.push_back(Value::Image(image));
  s.push_back(Value::Text("caption \xc3\xa9 #" + std::to_string(i)));
  s.push_back(Value::Label(static_cast<int64_t>(i) * 7 - 300));
  s.push_back(Value::Json("{\"i\": " + std::to_string(i) + "}"));
  for (size_t c = 4; c < schema.size(); ++c) {
    std::vector<uint64_t> shape;
    switch (i % 4) {
      case 0:
        shape = {};
        break;  // scalar
      case 1:
        shape = {i % 5};
        break;  // may be empty
      case 2:
        shape = {2, 1 + i % 3};
        break;
      default:
        shape = {1 + i % 2, 2, 3};
        break;
    }
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    std::string bytes(n * DataTypeSize(schema[c].dtype), '\0');
    for (char& b : bytes) b = static_cast<char>(rng());
    s.push_back(Value{schema[c].dtype, shape, bytes});
  }
  return s;
}

class RoundTrip : public ::testing::TestWithParam<Compression> {};

TEST_P(RoundTrip, EveryKindAndDtypeRaggedRandomAccess) {
  TempDir dir;
  const std::string loc = dir.Sub("ds");
  const Schema schema = FullSchema();
  WriterOptions options;
  options.chunk_bytes = 2048;  // many chunks
  options.compression = GetParam();
  auto writer = Writer::Create(loc, schema, options);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  constexpr uint64_t kSamples = 300;
  for (uint64_t i = 0; i < kSamples; ++i)
    ASSERT_TRUE((*writer)->Append(MakeSample(schema, i)).ok());
  auto id = (*writer)->Commit({"all kinds", "tester", "format_test"});
  ASSERT_TRUE(id.ok()) << id.status().ToString();

  auto ds = Dataset::Open(loc);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ((*ds)->size(), kSamples);
  EXPECT_EQ((*ds)->commit().id, *id);
  EXPECT_GT((*ds)->commit().num_chunks, 10u);
  ASSERT_EQ((*ds)->schema().size(), schema.size());
  for (size_t c = 0; c < schema.size(); ++c) {
    EXPECT_EQ((*ds)->schema()[c].name, schema[c].name);
    EXPECT_EQ((*ds)->schema()[c].kind, schema[c].kind);
  }
  std::vector<uint64_t> order(kSamples);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(42));
  for (uint64_t i : order) {
    auto sample = (*ds)->Get(i);
    ASSERT_TRUE(sample.ok()) << sample.status().ToString();
    ASSERT_EQ(*sample, MakeSample(schema, i)) << "sample " << i;
    EXPECT_EQ(*(*ds)->SampleId(i), i);
  }
  EXPECT_EQ((*ds)->Get(3)->at(2).label(), 3 * 7 - 300);
  auto verify = Verify(loc);
  ASSERT_TRUE(verify.ok());
  EXPECT_TRUE(verify->problems.empty());
}

INSTANTIATE_TEST_SUITE_P(Compressions, RoundTrip,
                         ::testing::Values(Compression::kNone, Compression::kZstd,
                                           Compression::kLz4),
                         [](const auto& info) { return std::string(CompressionName(info.param)); });

// Chunks close at the target size (overshooting by at most one sample), and
// compression shrinks compressible chunks.
TEST(DataFormat, ChunksMeetTheTargetSizeAndCompress) {
  TempDir dir;
  constexpr uint64_t kTarget = 64 << 10, kSampleBytes = 1000;
  uint64_t stored[3] = {0, 0, 0};
  for (Compression c : {Compression::kNone, Compression::kZstd, Compression::kLz4}) {
    const std::string loc = dir.Sub(CompressionName(c));
    WriterOptions options;
    options.chunk_bytes = kTarget;
    options.compression = c;
    auto w = Writer::Create(loc, {{"t", ColumnKind::kText}}, options);
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 1000; ++i) {
      ASSERT_TRUE(
          (*w)->Append({Value::Text(std::string(kSampleBytes, static_cast<char>('a' + i % 26)))})
              .ok());
    }
    auto id = (*w)->Commit({"text"});
    ASSERT_TRUE(id.ok());
    auto repo = Repository::Open(loc);
    ASSERT_TRUE(repo.ok());
    auto commit = (*repo)->LoadCommit(*id);
    ASSERT_TRUE(commit.ok());
    const uint64_t record = kSampleBytes + 9;  // ndim byte + one dimension
    const uint64_t per_chunk = (kTarget + record - 1) / record;
    ASSERT_EQ(commit->chunks.size(), (1000 + per_chunk - 1) / per_chunk);
    for (size_t k = 0; k + 1 < commit->chunks.size(); ++k)
      EXPECT_EQ(commit->chunks[k].num_samples, per_chunk);
    stored[static_cast<int>(c)] = CommitInfoOf(*id, *commit).stored_bytes;
  }
  EXPECT_GT(stored[0], 1000 * kSampleBytes);
  EXPECT_LT(stored[1] * 20, stored[0]) << "zstd";
  EXPECT_LT(stored[2] * 20, stored[0]) << "lz4";
}

TEST(DataFormat, OutOfRangeAndBadValuesAreErrors) {
  TempDir dir;
  auto writer = Writer::Create(
      dir.Sub("ds"), {{"x", ColumnKind::kArray, DataType::kInt32}, {"y", ColumnKind::kLabel}});
  ASSERT_TRUE(writer.ok());
  int32_t v[2] = {1, 2};
  Status wrong_dtype =
      (*writer)->Append({Value::Array(DataType::kFloat32, {2}, v), Value::Label(1)});
  EXPECT_EQ(wrong_dtype.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(wrong_dtype.message().find("column 'x'"), std::string::npos) << wrong_dtype.message();
  Status short_sample = (*writer)->Append({Value::Array(DataType::kInt32, {2}, v)});
  EXPECT_EQ(short_sample.code(), Status::Code::kInvalidArgument);
  Value bad_shape = Value::Array(DataType::kInt32, {2}, v);
  bad_shape.shape = {3};
  EXPECT_FALSE((*writer)->Append({bad_shape, Value::Label(1)}).ok());
  ASSERT_TRUE((*writer)->Append({Value::Array(DataType::kInt32, {2}, v), Value::Label(1)}).ok());
  EXPECT_EQ((*writer)->Update(5, {Value::Array(DataType::kInt32, {2}, v), Value::Label(1)}).code(),
            Status::Code::kInvalidArgument);
  ASSERT_TRUE((*writer)->Commit({"one"}).ok());
  auto ds = Dataset::Open(dir.Sub("ds"));
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ((*ds)->Get(1).status().code(), Status::Code::kInvalidArgument);
  EXPECT_FALSE(Writer::Create(dir.Sub("ds"), FloatSchema()).ok()) << "exists already";
  EXPECT_FALSE(Writer::Create(dir.Sub("ds2"), {{"a"}, {"a"}}).ok()) << "duplicate column";
  EXPECT_FALSE(Dataset::Open(dir.Sub("nothing")).ok());
  EXPECT_FALSE(Dataset::Open(dir.Sub("ds"), "no-such-branch").ok());
}

TEST(DataFormat, ChunkIndexFindsEverySample) {
  std::vector<ChunkRef> chunks = {{"a", 3, 0}, {"b", 1, 0}, {"c", 5, 0}};
  ChunkIndex index(chunks);
  EXPECT_EQ(index.size(), 9u);
  std::vector<std::pair<size_t, uint64_t>> expected = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {2, 0},
                                                       {2, 1}, {2, 2}, {2, 3}, {2, 4}};
  for (uint64_t i = 0; i < 9; ++i) EXPECT_EQ(index.Find(i), expected[i]) << i;
}

TEST(DataFormat, CommitObjectRoundTrips) {
  CommitObject c;
  c.parent = std::string(63, 'a') + "b";
  c.time = 1700000000;
  c.message = "m";
  c.author = "au";
  c.command = "cmd --x";
  c.next_sample_id = 99;
  c.schema = {{"img", ColumnKind::kImage}, {"v", ColumnKind::kArray, DataType::kBFloat16}};
  c.chunks = {{std::string(64, 'c'), 5, 1234}, {std::string(64, 'd'), 1, 40}};
  std::string bytes = EncodeCommit(c);
  auto back = DecodeCommit(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->parent, c.parent);
  EXPECT_EQ(back->time, c.time);
  EXPECT_EQ(back->command, c.command);
  EXPECT_EQ(back->next_sample_id, 99u);
  EXPECT_EQ(back->chunks, c.chunks);
  EXPECT_EQ(back->schema[1].dtype, DataType::kBFloat16);
  bytes[20] ^= 1;
  EXPECT_FALSE(DecodeCommit(bytes).ok());
  EXPECT_FALSE(DecodeCommit(bytes.substr(0, 30)).ok());
}

}  // namespace
}  // namespace cohort::data
