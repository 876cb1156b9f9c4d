// Writers in child processes: killed with SIGKILL at chosen commit steps and
// at arbitrary moments, the dataset still opens at a complete commit and
// verifies; writers racing on one branch lose no commit.
#include <signal.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>

#include "cohort/data.h"
#include "data/data_test_util.h"
#include "support/child_process.h"

namespace cohort::data {
namespace {

using cohort::testing::ChildProcess;
using cohort::testing::Finished;
using cohort::testing::TestBinary;
using testing::FloatSample;
using testing::FloatSchema;
using testing::TempDir;

constexpr double kChildSeconds = 30;

std::string MakeDataset(const TempDir& dir) {
  std::string loc = dir.Sub("ds");
  WriterOptions options;
  options.chunk_bytes = 4 * 64 - 1;
  auto w = Writer::Create(loc, FloatSchema(), options);
  EXPECT_TRUE(w.ok());
  for (int i = 0; i < 20; ++i) EXPECT_TRUE((*w)->Append(FloatSample(static_cast<float>(i))).ok());
  EXPECT_TRUE((*w)->Commit({"twenty"}).ok());
  return loc;
}

// Opens at HEAD, reads every sample, and runs verify.
void ExpectIntact(const std::string& loc) {
  auto ds = Dataset::Open(loc);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  for (uint64_t i = 0; i < (*ds)->size(); ++i) {
    ASSERT_TRUE((*ds)->Get(i).ok()) << "sample " << i << ": " << (*ds)->Get(i).status().ToString();
  }
  auto report = Verify(loc);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->problems.empty()) << report->problems[0];
}

// A writer that can still commit after the crash (no lock left behind).
void ExpectWritable(const std::string& loc) {
  auto w = Writer::Open(loc);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*w)->Append(FloatSample(1)).ok());
  auto id = (*w)->Commit({"after the crash"});
  EXPECT_TRUE(id.ok()) << id.status().ToString();
}

class KilledAtStep : public ::testing::TestWithParam<const char*> {};

TEST_P(KilledAtStep, LeavesACompleteCommit) {
  TempDir dir;
  std::string loc = MakeDataset(dir);
  const std::string before = *ResolveRef(loc, "main");
  const std::string step = GetParam();
  ChildProcess child({TestBinary("data_writer_worker"), "die-at", loc, step});
  Finished done = child.Finish(Deadline::AfterSeconds(kChildSeconds));
  ASSERT_EQ(done.exit_code, 128 + SIGKILL) << done.err;
  const std::string after = *ResolveRef(loc, "main");
  if (step == "ref-replaced") {
    EXPECT_NE(after, before) << "the ref was swapped before the kill";
    EXPECT_EQ(Log(loc)->at(1).id, before);
  } else {
    EXPECT_EQ(after, before) << "killed before the swap: still the previous commit";
  }
  ExpectIntact(loc);
  ExpectWritable(loc);
  ExpectIntact(loc);
}

INSTANTIATE_TEST_SUITE_P(Steps, KilledAtStep,
                         ::testing::Values("chunk-written", "commit-written", "ref-locked",
                                           "ref-replaced"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(DataCrash, CreationInterruptedBeforeTheFirstCommitCanBeRedone) {
  TempDir dir;
  std::string loc = dir.Sub("ds");
  WriterOptions options;
  options.on_commit_step = [](std::string_view step) {
    if (step == "commit-written") ::raise(SIGKILL);
  };
  ASSERT_EXIT(Writer::Create(loc, FloatSchema(), options), ::testing::KilledBySignal(SIGKILL), "");
  EXPECT_FALSE(Dataset::Open(loc).ok()) << "no commit yet";
  auto w = Writer::Create(loc, FloatSchema());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_FALSE(Writer::Create(loc, FloatSchema()).ok()) << "now it exists";
  ExpectIntact(loc);
}

// Kills a writer that commits in a tight loop at moments the test does not
// choose (whatever point of the commit it has reached), several times.
TEST(DataCrash, WriterKilledAtRandomMomentsLeavesAValidCommit) {
  TempDir dir;
  std::string loc = MakeDataset(dir);
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; round < 6; ++round) {
    ChildProcess child({TestBinary("data_writer_worker"), "loop", loc});
    const int commits = 1 + static_cast<int>(rng() % 4);
    ASSERT_TRUE(child.WaitFor(
        [&] { return std::count(child.out().begin(), child.out().end(), '\n') >= commits; },
        Deadline::AfterSeconds(kChildSeconds)))
        << child.err();
    // Then let the next commit get 0, 1 or 2 chunk objects further before
    // the kill, so kills land at different steps of a commit.
    const size_t chunks = testing::CountObjects(loc, "chunks") + rng() % 3;
    Deadline spin = Deadline::AfterSeconds(kChildSeconds);
    while (testing::CountObjects(loc, "chunks") < chunks && !spin.Expired()) {
    }
    ::kill(child.pid(), SIGKILL);
    Finished done = child.Finish(Deadline::AfterSeconds(kChildSeconds));
    ASSERT_EQ(done.exit_code, 128 + SIGKILL) << done.err;
    // The last commit the child reported is in the history (it may have made one more).
    std::vector<std::string> lines = cohort::testing::Lines(done.out);
    std::string last_line;
    for (const std::string& line : lines) {
      if (line.rfind("committed ", 0) == 0 && line.size() > 70) last_line = line;
    }
    ASSERT_FALSE(last_line.empty()) << done.out;
    const std::string reported = last_line.substr(last_line.rfind(' ') + 1);
    auto log = Log(loc);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    bool found = std::any_of(log->begin(), log->begin() + std::min<size_t>(2, log->size()),
                             [&](const CommitInfo& c) { return c.id == reported; });
    EXPECT_TRUE(found) << "round " << round << ": reported commit " << reported
                       << " is not HEAD or HEAD~1";
    ExpectIntact(loc);
  }
  ExpectWritable(loc);
}

// Two processes committing to one branch at once: every successful commit
// lands in one linear history, none is lost, and losers see conflicts.
TEST(DataCrash, ConcurrentWritersLoseNoCommit) {
  TempDir dir;
  std::string loc = MakeDataset(dir);
  constexpr int kEach = 15;
  ChildProcess a({TestBinary("data_writer_worker"), "count", loc, std::to_string(kEach)});
  ChildProcess b({TestBinary("data_writer_worker"), "count", loc, std::to_string(kEach)});
  Finished fa = a.Finish(Deadline::AfterSeconds(kChildSeconds));
  Finished fb = b.Finish(Deadline::AfterSeconds(kChildSeconds));
  ASSERT_EQ(fa.exit_code, 0) << fa.err;
  ASSERT_EQ(fb.exit_code, 0) << fb.err;
  auto log = Log(loc);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->size(), 2u + 2 * kEach);  // create + "twenty" + every count commit
  auto ds = Dataset::Open(loc);
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ((*ds)->size(), 20u + 2 * kEach);
  ExpectIntact(loc);
  std::printf("conflicts: %s %s", fa.out.c_str(), fb.out.c_str());
}

}  // namespace
}  // namespace cohort::data
