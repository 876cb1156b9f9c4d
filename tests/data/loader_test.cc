// The loader: epoch order, shard disjointness and coverage for several rank
// and thread counts, pad/drop, exact resume (also with another rank count),
// independence of the thread count, bounded chunk memory, batch contents,
// and errors that name what is wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "cohort/loader.h"
#include "data/data_test_util.h"
#include "data/loader_fetch.h"
#include "data/loader_plan.h"
#include "data/repository.h"
#include "data/shuffle.h"

namespace cohort::data {
namespace {

using testing::FloatSample;
using testing::FloatSchema;
using testing::TempDir;

constexpr size_t kFloats = 4;

// `n` samples of FloatSample(i, 4) in chunks of about 8 samples.
void MakeFloatDataset(const std::string& dir, uint64_t n) {
  WriterOptions options;
  options.chunk_bytes = 8 * (1 + 8 + kFloats * 4) - 1;
  auto w = Writer::Create(dir, FloatSchema(), options);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (uint64_t i = 0; i < n; ++i) ASSERT_TRUE((*w)->Append(FloatSample(float(i), kFloats)).ok());
  ASSERT_TRUE((*w)->Commit({"floats"}).ok());
}

std::vector<uint64_t> ChunkSizes(const std::string& dir) {
  auto repo = Repository::Open(dir);
  auto id = (*repo)->Resolve("");
  auto commit = (*repo)->LoadCommit(*id);
  std::vector<uint64_t> sizes;
  for (const ChunkRef& c : commit->chunks) sizes.push_back(c.num_samples);
  return sizes;
}

std::unique_ptr<Loader> OpenLoader(const std::string& dir, LoaderOptions o) {
  auto loader = Loader::Open(dir, std::move(o));
  EXPECT_TRUE(loader.ok()) << loader.status().ToString();
  return loader.ok() ? std::move(*loader) : nullptr;
}

// (seed, epoch, consumed) of a state: where the stream stands.
std::tuple<uint64_t, uint64_t, uint64_t> Position(const LoaderState& s) {
  return {s.seed, s.epoch, s.consumed};
}

// Every batch of the loader's current epoch.
std::vector<Batch> Epoch(Loader* loader) {
  std::vector<Batch> batches;
  while (true) {
    auto b = loader->Next();
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok() || !*b) break;
    batches.push_back(std::move(**b));
  }
  return batches;
}

// Runs all ranks of a job for up to `steps` steps (all of the epoch by default).
std::vector<std::vector<Batch>> RunRanks(const std::string& dir, LoaderOptions o, int ranks,
                                         uint64_t steps = UINT64_MAX) {
  std::vector<std::vector<Batch>> out(ranks);
  for (int r = 0; r < ranks; ++r) {
    o.rank = r;
    o.world_size = ranks;
    auto loader = OpenLoader(dir, o);
    for (uint64_t s = 0; s < steps; ++s) {
      auto b = loader->Next();
      EXPECT_TRUE(b.ok()) << b.status().ToString();
      if (!b.ok() || !*b) break;
      out[r].push_back(std::move(**b));
    }
  }
  return out;
}

TEST(EpochOrderTest, IsAPermutationFixedBySeedAndEpoch) {
  const std::vector<uint64_t> sizes = {5, 8, 8, 3, 8, 8, 8, 1, 8, 8, 7};
  const EpochOrder a(sizes, {true, 42, 3}, 0);
  std::vector<uint64_t> all = a.All();
  std::vector<uint64_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  for (uint64_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i);
  EXPECT_EQ(all, EpochOrder(sizes, {true, 42, 3}, 0).All());
  EXPECT_NE(all, EpochOrder(sizes, {true, 42, 3}, 1).All());
  EXPECT_NE(all, EpochOrder(sizes, {true, 43, 3}, 0).All());
  // Each window holds exactly the samples of its (at most 3) chunks.
  for (size_t w = 0; w < a.num_windows(); ++w) {
    std::set<size_t> chunks;
    for (uint64_t s : a.WindowSamples(w)) chunks.insert(a.ChunkOf(s).first);
    EXPECT_LE(chunks.size(), 3u);
  }
  std::vector<uint64_t> plain = EpochOrder(sizes, {false, 42, 3}, 5).All();
  for (uint64_t i = 0; i < plain.size(); ++i) EXPECT_EQ(plain[i], i);
}

TEST(EpochOrderTest, MixesAcrossChunksLikeAUniformShuffle) {
  const std::vector<uint64_t> sizes(500, 100);  // 50,000 samples
  const ShuffleQuality q = MeasureShuffle(EpochOrder(sizes, {true, 1, 8}, 0).All(), sizes);
  // Neighbours come from the same chunk 1 time in 8 (a window holds 8 chunks
  // drawn from all over the dataset) and otherwise jump as far as under a
  // uniform shuffle: 7/8 of the uniform mean jump.
  EXPECT_NEAR(q.same_chunk_fraction, 1.0 / 8, 0.01);
  EXPECT_NEAR(q.mean_jump_ratio, 7.0 / 8, 0.02);
  EXPECT_NEAR(q.mean_displacement_ratio, 1.0, 0.05);
  const ShuffleQuality none = MeasureShuffle(EpochOrder(sizes, {false, 1, 8}, 0).All(), sizes);
  EXPECT_LT(none.mean_jump_ratio, 0.001);
  EXPECT_GT(none.same_chunk_fraction, 0.98);
}

TEST(LoaderTest, RanksGetDisjointShardsCoveringTheEpoch) {
  TempDir dir;
  const uint64_t n = 103;
  MakeFloatDataset(dir.path(), n);
  for (int ranks : {1, 2, 3, 4}) {
    for (int threads : {1, 3}) {
      for (bool drop : {false, true}) {
        SCOPED_TRACE("ranks " + std::to_string(ranks) + " threads " + std::to_string(threads) +
                     (drop ? " drop" : " pad"));
        LoaderOptions o;
        o.batch_size = 5;
        o.threads = threads;
        o.drop_last = drop;
        o.window_chunks = 2;
        o.start.seed = 7;
        auto shards = RunRanks(dir.path(), o, ranks);
        const uint64_t step = uint64_t(ranks) * 5;
        const uint64_t steps = drop ? n / step : (n + step - 1) / step;
        std::map<uint64_t, int> seen;
        uint64_t padded = 0;
        for (const auto& batches : shards) {
          ASSERT_EQ(batches.size(), steps);  // every rank the same number of batches
          for (const Batch& b : batches) {
            ASSERT_EQ(b.indices.size(), 5u);
            for (size_t k = 0; k < 5 - b.padded; ++k) ++seen[b.indices[k]];
            padded += b.padded;
          }
        }
        for (auto [index, times] : seen) EXPECT_EQ(times, 1) << "sample " << index;
        EXPECT_EQ(seen.size(), drop ? steps * step : n);
        EXPECT_EQ(padded, drop ? 0 : steps * step - n);
      }
    }
  }
}

TEST(LoaderTest, RankBatchesFollowTheGlobalOrder) {
  TempDir dir;
  MakeFloatDataset(dir.path(), 90);
  LoaderOptions o;
  o.batch_size = 4;
  o.window_chunks = 3;
  o.start.seed = 11;
  o.start.epoch = 2;
  auto shards = RunRanks(dir.path(), o, 3);
  const std::vector<uint64_t> order = EpochOrder(ChunkSizes(dir.path()), {true, 11, 3}, 2).All();
  for (int r = 0; r < 3; ++r) {
    for (size_t t = 0; t < shards[r].size(); ++t) {
      for (size_t k = 0; k < 4; ++k) {
        EXPECT_EQ(shards[r][t].indices[k], order[(t * 12 + r * 4 + k) % order.size()]);
      }
    }
  }
}

TEST(LoaderTest, RowsHoldTheSamplesValues) {
  TempDir dir;
  MakeFloatDataset(dir.path(), 40);
  LoaderOptions o;
  o.batch_size = 8;
  auto loader = OpenLoader(dir.path(), o);
  for (const Batch& b : Epoch(loader.get())) {
    const Tensor& x = b.column("x");
    ASSERT_EQ(x.dtype, DataType::kFloat32);
    ASSERT_EQ(x.shape, (std::vector<uint64_t>{8, kFloats}));
    for (size_t k = 0; k < 8; ++k) {
      for (size_t j = 0; j < kFloats; ++j) {
        EXPECT_EQ(x.data<float>()[k * kFloats + j], float(b.indices[k] + j));
      }
    }
  }
}

TEST(LoaderTest, OutputDoesNotDependOnThreadCount) {
  TempDir dir;
  MakeFloatDataset(dir.path(), 77);
  std::vector<std::vector<uint64_t>> streams;
  for (int threads : {1, 2, 5}) {
    LoaderOptions o;
    o.batch_size = 3;
    o.threads = threads;
    o.prefetch_batches = threads;
    o.rank = 1;
    o.world_size = 2;
    auto loader = OpenLoader(dir.path(), o);
    std::vector<uint64_t> stream;
    for (int epoch = 0; epoch < 2; ++epoch) {
      for (const Batch& b : Epoch(loader.get())) {
        stream.insert(stream.end(), b.indices.begin(), b.indices.end());
        const float* x = b.column("x").data<float>();
        for (size_t k = 0; k < 3; ++k) EXPECT_EQ(x[k * kFloats], float(b.indices[k]));
      }
    }
    streams.push_back(stream);
  }
  EXPECT_EQ(streams[0], streams[1]);
  EXPECT_EQ(streams[0], streams[2]);
  EXPECT_EQ(streams[0].size(), 2u * ((77 + 5) / 6) * 3);
}

// A job stopped after `steps` steps and resumed from the saved state with
// another number of ranks sees every sample of the epoch exactly once.
TEST(LoaderTest, ResumeWithAnotherRankCountRepeatsAndSkipsNothing) {
  TempDir dir;
  const uint64_t n = 120;
  MakeFloatDataset(dir.path(), n);
  LoaderOptions o;
  o.batch_size = 4;
  o.window_chunks = 2;
  o.start.seed = 3;
  for (auto [before, after] : {std::pair{3, 2}, std::pair{2, 5}, std::pair{4, 4}}) {
    SCOPED_TRACE(std::to_string(before) + " ranks then " + std::to_string(after));
    auto first = RunRanks(dir.path(), o, before, 3);
    const LoaderState saved = first[0].back().state_after;
    for (const auto& rank : first) EXPECT_EQ(rank.back().state_after, saved);
    EXPECT_EQ(Position(saved), (std::tuple<uint64_t, uint64_t, uint64_t>{3, 0, before * 12}));
    LoaderOptions resumed = o;
    resumed.start = saved;
    auto second = RunRanks(dir.path(), resumed, after);
    std::map<uint64_t, int> seen;
    for (const auto* part : {&first, &second}) {
      for (const auto& rank : *part) {
        for (const Batch& b : rank) {
          for (size_t k = 0; k < b.indices.size() - b.padded; ++k) ++seen[b.indices[k]];
        }
      }
    }
    EXPECT_EQ(seen.size(), n);
    for (auto [index, times] : seen) EXPECT_EQ(times, 1) << "sample " << index;
    EXPECT_EQ(Position(second[0].back().state_after),
              (std::tuple<uint64_t, uint64_t, uint64_t>{3, 1, 0}));
  }
}

TEST(LoaderTest, ResumedStreamEqualsTheUninterruptedOne) {
  TempDir dir;
  MakeFloatDataset(dir.path(), 64);
  LoaderOptions o;
  o.batch_size = 3;
  o.start.seed = 9;
  auto whole = OpenLoader(dir.path(), o);
  std::vector<Batch> all = Epoch(whole.get());
  all.push_back(*Epoch(whole.get()).begin());  // and the first batch of epoch 1
  for (size_t stop : {size_t{0}, size_t{5}, all.size() - 2}) {
    LoaderOptions r = o;
    r.start = stop == 0 ? o.start : all[stop - 1].state_after;
    auto resumed = OpenLoader(dir.path(), r);
    for (size_t i = stop; i < all.size(); ++i) {
      auto b = resumed->Next();
      ASSERT_TRUE(b.ok());
      if (!*b) b = resumed->Next();  // epoch boundary
      ASSERT_TRUE(b.ok() && *b);
      EXPECT_EQ((*b)->indices, all[i].indices) << "batch " << i << " after resuming at " << stop;
      EXPECT_EQ((*b)->epoch, all[i].epoch);
    }
  }
}

TEST(LoaderTest, FetcherHoldsAtMostThePlansCapacity) {
  TempDir dir;
  MakeFloatDataset(dir.path(), 400);
  const std::vector<uint64_t> sizes = ChunkSizes(dir.path());
  const EpochOrder order(sizes, {true, 5, 4}, 0);
  const LoaderPlan plan = MakeLoaderPlan(order, {0, 2, 6, false, 0}, 4);
  EXPECT_LE(plan.capacity, 4u + 8u + 4u);  // a batch spans at most two windows of 4
  auto repo = Repository::Open(dir.path());
  auto id = (*repo)->Resolve("");
  auto commit = (*repo)->LoadCommit(*id);
  ChunkFetcher fetcher(repo->get(), *id, &commit->chunks, &plan);
  for (const PlannedSample& s : plan.samples) {
    auto chunk = fetcher.Wait(s.load);
    ASSERT_TRUE(chunk.ok());
    EXPECT_EQ((*chunk)->size(), sizes[plan.loads[s.load].chunk]);
    fetcher.Release(s.load);
  }
  EXPECT_LE(fetcher.max_resident(), plan.capacity);
  EXPECT_GE(fetcher.max_resident(), 1u);
}

TEST(LoaderTest, BadOptionsAndColumnsAreNamed) {
  TempDir dir;
  MakeFloatDataset(dir.path(), 10);
  LoaderOptions o;
  o.rank = 2;
  o.world_size = 2;
  auto bad_rank = Loader::Open(dir.path(), o);
  ASSERT_FALSE(bad_rank.ok());
  EXPECT_EQ(bad_rank.status().message(), "loader rank 2 is not in [0, world size 2)");
  LoaderOptions c;
  c.columns = {"y"};
  auto missing = Loader::Open(dir.path(), c);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "dataset " + dir.path() + " has no column 'y' (it has: x)");

  TempDir text;
  auto w = Writer::Create(text.path(), {{"t", ColumnKind::kText}});
  ASSERT_TRUE((*w)->Append({Value::Text("hi")}).ok());
  ASSERT_TRUE((*w)->Commit({"text"}).ok());
  auto t = Loader::Open(text.path(), {});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("column 't' holds text, which cannot be batched"),
            std::string::npos)
      << t.status().message();
}

TEST(LoaderTest, RaggedArraysFailNamingTheColumnAndSample) {
  TempDir dir;
  auto w = Writer::Create(dir.path(), FloatSchema());
  ASSERT_TRUE((*w)->Append(FloatSample(0, 4)).ok());
  ASSERT_TRUE((*w)->Append(FloatSample(1, 5)).ok());
  ASSERT_TRUE((*w)->Commit({"ragged"}).ok());
  LoaderOptions o;
  o.batch_size = 2;
  o.shuffle = false;
  auto loader = OpenLoader(dir.path(), o);
  auto b = loader->Next();
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("column 'x': a sample of shape [5] cannot join a batch of "
                                      "shape [4]"),
            std::string::npos)
      << b.status().message();
  EXPECT_NE(b.status().message().find("sample 1"), std::string::npos) << b.status().message();
}

TEST(LoaderTest, CorruptChunkFailsTheBatchWithoutHanging) {
  TempDir dir;
  MakeFloatDataset(dir.path(), 40);
  // Flip a byte in the middle of every chunk object.
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path() + "/chunks")) {
    if (!e.is_regular_file()) continue;
    std::string bytes = testing::ReadFile(e.path());
    bytes[bytes.size() / 2] ^= 0x40;
    testing::WriteFile(e.path(), bytes);
  }
  LoaderOptions o;
  o.batch_size = 4;
  o.threads = 3;
  auto loader = OpenLoader(dir.path(), o);
  auto b = loader->Next();
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("checksum mismatch"), std::string::npos)
      << b.status().message();
  EXPECT_NE(b.status().message().find("chunk "), std::string::npos) << b.status().message();
}

}  // namespace
}  // namespace cohort::data
