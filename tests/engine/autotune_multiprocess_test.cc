// COHORT_AUTOTUNE under `cohort run`: every rank applies rank 0's values at
// the same negotiation round, after the same number of allreduces, and the
// results stay exact while fusion and the algorithm cut-overs change.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "support/child_process.h"
#include "support/read_csv.h"

namespace cohort::testing {
namespace {

std::vector<std::vector<std::string>> RowsOf(const std::vector<std::vector<std::string>>& rows,
                                             const std::vector<std::string>& events) {
  std::vector<std::vector<std::string>> out;
  for (const auto& row : rows) {
    if (std::find(events.begin(), events.end(), row[0]) != events.end()) out.push_back(row);
  }
  return out;
}

void CheckRanksAgree(int np, const std::string& transport) {
  const std::string dir =
      ::testing::TempDir() + "/autotune." + std::to_string(::getpid()) + "." + std::to_string(np);
  ASSERT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  // 1 warm-up sample, then 6 samples of 2 steps (each after a skipped step):
  // about 25 steps; 40 leave room.
  Finished f = RunCohort({"run", "-np", std::to_string(np), "--timeout", "60", "--transport",
                          transport, "--", TestBinary("engine_worker"), "autotune", "40"},
                         120,
                         {{"COHORT_AUTOTUNE", "1"},
                          {"COHORT_AUTOTUNE_LOG", dir + "/tune.{rank}.csv"},
                          {"COHORT_AUTOTUNE_WARMUP_SAMPLES", "1"},
                          {"COHORT_AUTOTUNE_STEPS_PER_SAMPLE", "2"},
                          {"COHORT_AUTOTUNE_MAX_SAMPLES", "6"},
                          {"COHORT_LOG_LEVEL", "info"}});
  ASSERT_EQ(f.exit_code, 0) << f.out << f.err;
  for (int r = 0; r < np; ++r) {
    EXPECT_TRUE(Contains(f.out, "rank " + std::to_string(r) + ": autotune steps exact")) << f.out;
  }
  const auto rank0 = ReadCsv(dir + "/tune.0.csv");
  ASSERT_FALSE(rank0.empty());
  EXPECT_EQ(rank0[0][0], "event");
  EXPECT_EQ(RowsOf(rank0, {"warmup"}).size(), 1u);
  const auto samples = RowsOf(rank0, {"sample"});
  ASSERT_EQ(samples.size(), 6u);
  const auto changes = RowsOf(rank0, {"apply", "final"});
  ASSERT_EQ(changes.size(), 6u) << "one change after each sample";
  EXPECT_EQ(changes.back()[0], "final");
  // The choice is one of the measured values (columns 4-7).
  bool measured = false;
  for (const auto& s : samples) {
    measured = measured || std::equal(s.begin() + 4, s.begin() + 8, changes.back().begin() + 4);
  }
  EXPECT_TRUE(measured);
  for (const auto& s : samples) EXPECT_GT(std::stod(s[8]), 0) << "a positive score";
  // Every rank applied the same values at the same round, after the same
  // number of allreduces (columns 1-7 of each change).
  for (int r = 1; r < np; ++r) {
    const auto theirs = ReadCsv(dir + "/tune." + std::to_string(r) + ".csv");
    EXPECT_TRUE(RowsOf(theirs, {"sample", "warmup"}).empty()) << "only rank 0 measures";
    EXPECT_EQ(RowsOf(theirs, {"apply", "final"}), changes) << "rank " << r;
  }
  // Rank 0 reports its choice.
  EXPECT_TRUE(Contains(f.err, "autotune chose fusion threshold")) << f.err;
  EXPECT_EQ(system(("rm -rf " + dir).c_str()), 0);
}

TEST(EngineAutotune, TwoRanksOnSharedMemoryApplyTheSameValuesAtTheSameRound) {
  CheckRanksAgree(2, "auto");
}

TEST(EngineAutotune, ThreeRanksOverTcpApplyTheSameValuesAtTheSameRound) {
  CheckRanksAgree(3, "tcp");
}

}  // namespace
}  // namespace cohort::testing
