// Loader states and epochs that cannot work: a saved state pins the commit
// (and shuffle window) it was read with, states that no loader can have made
// are refused naming the field, epochs without a batch are refused naming
// the sizes, and the thread bound is checked once for arguments and COHORT_*.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "cohort/loader.h"
#include "data/data_test_util.h"

namespace cohort::data {
namespace {

using testing::FloatSample;
using testing::FloatSchema;
using testing::TempDir;

// `n` samples in chunks of about 8; returns the commit id.
std::string MakeDataset(const std::string& dir, uint64_t n) {
  WriterOptions options;
  options.chunk_bytes = 8 * (1 + 8 + 4 * 4) - 1;
  auto w = Writer::Create(dir, FloatSchema(), options);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  for (uint64_t i = 0; i < n; ++i) EXPECT_TRUE((*w)->Append(FloatSample(float(i), 4)).ok());
  auto id = (*w)->Commit({"floats"});
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return id.ok() ? *id : "";
}

// Appends one sample to the branch: a new HEAD whose epoch order differs.
std::string AppendOne(const std::string& dir) {
  auto w = Writer::Open(dir);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_TRUE((*w)->Append(FloatSample(-1, 4)).ok());
  auto id = (*w)->Commit({"one more"});
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return id.ok() ? *id : "";
}

std::string OpenError(const std::string& dir, const LoaderOptions& o) {
  auto loader = Loader::Open(dir, o);
  return loader.ok() ? "(opened)" : loader.status().message();
}

// Sample index -> times seen, over the rest of the loader's epoch (padding left out).
void CountRest(Loader* loader, std::map<uint64_t, int>* seen) {
  while (true) {
    auto b = loader->Next();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    if (!*b) return;
    for (size_t k = 0; k < (*b)->indices.size() - (*b)->padded; ++k) ++(*seen)[(*b)->indices[k]];
  }
}

TEST(LoaderStateTest, AStateNamesItsCommitAndResumesOnItAfterACommit) {
  TempDir dir;
  const std::string first = MakeDataset(dir.path(), 101);
  LoaderOptions o;
  o.batch_size = 5;
  o.window_chunks = 2;
  o.start.seed = 4;
  auto loader = Loader::Open(dir.path(), o);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  std::map<uint64_t, int> seen;
  for (int step = 0; step < 7; ++step) {
    auto b = (*loader)->Next();
    ASSERT_TRUE(b.ok() && *b);
    for (uint64_t i : (*b)->indices) ++seen[i];
  }
  const LoaderState saved = (*loader)->state();
  EXPECT_EQ(saved.commit, first);
  EXPECT_EQ(saved.window_chunks, 2u);
  EXPECT_TRUE(saved.shuffle);
  EXPECT_EQ(saved.consumed, 35u);

  const std::string second = AppendOne(dir.path());
  LoaderOptions resumed = o;
  resumed.start = saved;
  auto again = Loader::Open(dir.path(), resumed);  // ref empty: the state's commit, not HEAD
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->dataset_size(), 101u);
  CountRest(again->get(), &seen);
  ASSERT_EQ(seen.size(), 101u);
  for (auto [index, times] : seen) EXPECT_EQ(times, 1) << "sample " << index;

  resumed.ref = "main";
  EXPECT_EQ(OpenError(dir.path(), resumed),
            "the loader state was saved on commit " + first + " of dataset " + dir.path() +
                ", but ref 'main' is commit " + second +
                ": a state resumes on its own commit (leave ref empty). To go on with epoch 0 on "
                "the other commit set allow_commit_change: its order differs, so the rest of "
                "that epoch may repeat or skip samples (nothing is lost when consumed is 0); the "
                "epochs after it are whole");
  resumed.allow_commit_change = true;
  auto moved = Loader::Open(dir.path(), resumed);
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ((*moved)->dataset_size(), 102u);
  EXPECT_EQ((*moved)->state().commit, second);
}

TEST(LoaderStateTest, AnotherShuffleWindowIsRefused) {
  TempDir dir;
  MakeDataset(dir.path(), 40);
  LoaderOptions o;
  o.batch_size = 4;
  auto loader = Loader::Open(dir.path(), o);
  ASSERT_TRUE(loader.ok());
  ASSERT_TRUE((*loader)->Next().ok());
  o.start = (*loader)->state();
  o.window_chunks = 3;
  EXPECT_EQ(OpenError(dir.path(), o),
            "the loader state was saved with window_chunks 8 and shuffle on, the loader has "
            "window_chunks 3 and shuffle on: they fix the epoch's order, resume with the state's");
}

TEST(LoaderStateTest, ConsumedBeyondTheEpochIsRefused) {
  TempDir dir;
  const std::string id = MakeDataset(dir.path(), 30);
  LoaderOptions o;
  o.start.consumed = 30;
  EXPECT_EQ(OpenError(dir.path(), o), "loader state consumed 30 is beyond the epoch: dataset " +
                                          dir.path() + ", commit " + id + " has 30 samples");
}

TEST(LoaderStateTest, EpochsWithoutABatchAreRefusedNamingTheSizes) {
  TempDir empty;
  auto w = Writer::Create(empty.path(), FloatSchema());
  ASSERT_TRUE(w.ok());
  const std::string created = (*w)->base();
  EXPECT_EQ(OpenError(empty.path(), {}),
            "dataset " + empty.path() + ", commit " + created +
                " has no samples (an ingest's first, empty commit?): every epoch would be empty");

  TempDir dir;
  const std::string id = MakeDataset(dir.path(), 10);
  LoaderOptions o;
  o.world_size = 3;
  o.batch_size = 4;
  o.drop_last = true;
  EXPECT_EQ(OpenError(dir.path(), o),
            "dataset " + dir.path() + ", commit " + id +
                " has 10 samples, fewer than one step of 3 ranks x batch size 4 = 12: with "
                "drop_last every epoch would be empty; lower the batch size or keep the last "
                "step (drop_last off)");
  o.drop_last = false;  // padding: one step of 3 x 5, rank 2's batch is all padding
  o.batch_size = 5;
  o.rank = 2;
  auto loader = Loader::Open(dir.path(), o);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  auto b = (*loader)->Next();
  ASSERT_TRUE(b.ok() && *b);
  EXPECT_EQ((*b)->padded, 5u);
}

TEST(LoaderStateTest, ThreadBoundsAreOneCheckForArgumentsAndEnvironment) {
  TempDir dir;
  MakeDataset(dir.path(), 10);
  LoaderOptions o;
  o.threads = 257;
  EXPECT_EQ(OpenError(dir.path(), o),
            "loader threads (COHORT_LOADER_THREADS) must be 1..256, is 257");
  ::setenv("COHORT_LOADER_THREADS", "0", 1);
  LoaderOptions e;
  const Status parsed = ApplyLoaderEnv(&e);
  ::unsetenv("COHORT_LOADER_THREADS");
  ASSERT_TRUE(parsed.ok()) << parsed.ToString();
  EXPECT_EQ(OpenError(dir.path(), e), "loader threads (COHORT_LOADER_THREADS) must be 1..256, is 0");
}

}  // namespace
}  // namespace cohort::data
