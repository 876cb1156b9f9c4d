// The autotuner without processes: the Bayesian search converges on a
// synthetic score, exactly and reproducibly for a seed; the autotuner turns
// timed steps into samples and orders; the log reads back; the order's wire
// format; bad settings are errors naming the setting.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/settings.h"
#include "engine/autotune_log.h"
#include "engine/autotuner.h"
#include "engine/bayesian_search.h"
#include "engine/request.h"
#include "engine/runtime.h"
#include "support/fake_env.h"
#include "support/read_csv.h"

namespace cohort {
namespace {

// A smooth score over grid positions with its one maximum at `best`, scaled
// like allreduced bytes per second.
double Synthetic(const SearchPoint& p, const SearchPoint& best) {
  double d2 = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double d = static_cast<double>(p[i]) - static_cast<double>(best[i]);
    d2 += d * d;
  }
  return 1e9 * std::exp(-d2 / 8);
}

std::vector<BayesianSearch::Sample> Search(const SearchPoint& best, uint64_t seed,
                                           SearchPoint* chosen) {
  const std::vector<SearchDimension> grid = Autotuner::Grid(TuningValues{});
  BayesianSearch search(grid, {6, 2, 2, 1}, BayesianSearchOptions{.max_samples = 20, .seed = seed});
  while (!search.done()) search.Tell(Synthetic(search.next(), best));
  *chosen = search.Best();
  EXPECT_EQ(search.next(), *chosen);
  return search.samples();
}

TEST(BayesianSearch, ConvergesOnASyntheticScore) {
  // The defaults are {64M, 1 ms, 64K, 1M} = {6, 2, 2, 1}; the optimum is far
  // from them in every dimension: {4M, 0.25 ms, 256K, 16M}.
  const SearchPoint best = {2, 0, 3, 3};
  SearchPoint chosen;
  const std::vector<BayesianSearch::Sample> samples = Search(best, 7, &chosen);
  ASSERT_EQ(samples.size(), 20u);
  EXPECT_EQ(samples[0].point, (SearchPoint{6, 2, 2, 1})) << "the start point is measured first";
  EXPECT_EQ(chosen, best);
  // Of 1400 candidates 20 were measured: the search went to the optimum
  // rather than stumbling on it.
  size_t at = 0;
  while (samples[at].point != best) ++at;
  EXPECT_LT(at, 20u);
}

TEST(BayesianSearch, IsExactlyReproducibleForASeed) {
  const SearchPoint best = {5, 4, 1, 2};
  SearchPoint a_best, b_best, c_best;
  const auto a = Search(best, 42, &a_best);
  const auto b = Search(best, 42, &b_best);
  const auto c = Search(best, 43, &c_best);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].point, b[i].point) << i;
    EXPECT_EQ(a[i].score, b[i].score) << i;
  }
  EXPECT_EQ(a_best, best);
  EXPECT_EQ(c_best, best);
  EXPECT_NE(a[1].point, c[1].point) << "another seed draws other random points";
}

TEST(BayesianSearch, StopsWhenEveryCandidateWasTried) {
  BayesianSearch search({{"x", {1, 2, 3}}}, {0}, BayesianSearchOptions{.max_samples = 50});
  std::vector<size_t> seen;
  while (!search.done()) {
    seen.push_back(search.next()[0]);
    search.Tell(seen.back() == 1 ? 10 : 1);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(search.Best(), (SearchPoint{1}));
}

// Drives the autotuner as the engine does, on a fake clock: each step
// allreduces three tensors, and takes as long as the values in force make it.
TEST(Autotuner, ScoresStepsAndOrdersTheBestValues) {
  const std::vector<SearchDimension> grid = Autotuner::Grid(TuningValues{});
  const TuningValues best = Autotuner::ValuesAt(grid, {3, 1, 3, 0});
  auto step_seconds = [&](const TuningValues& v) {
    // 30 MB per step; 10 ms at `best`, slower the further the values are.
    double penalty =
        std::fabs(std::log2(double(v.fusion_threshold_bytes) / best.fusion_threshold_bytes)) +
        std::fabs(std::log2(v.cycle_time_ms / best.cycle_time_ms)) +
        std::fabs(std::log2(double(v.small_message_bytes) / best.small_message_bytes)) +
        std::fabs(std::log2(double(v.single_copy_bytes) / best.single_copy_bytes));
    return 0.010 * (1 + 0.05 * penalty);
  };
  AutotuneOptions o;
  o.enabled = true;
  o.warmup_samples = 2;
  o.steps_per_sample = 3;
  o.max_samples = 25;
  Autotuner tuner(TuningValues{}, o);
  TuningValues now_in_force;
  Clock::time_point t{};
  std::vector<TuningOrder> orders;
  std::vector<AutotuneSample> samples;
  for (int step = 0; step < 200 && !tuner.done(); ++step) {
    for (const char* name : {"a", "b", "c"}) {
      std::optional<TuningOrder> order = tuner.Observe({name}, 10'000'000, t);
      if (order) {
        orders.push_back(*order);
        now_in_force = order->values;  // the engine applies it in the next round
      }
      t += std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(step_seconds(now_in_force) / 3));
    }
    for (const AutotuneSample& s : tuner.TakeSamples()) samples.push_back(s);
  }
  ASSERT_TRUE(tuner.done());
  ASSERT_EQ(samples.size(), 27u) << "2 warm-up samples, then 25";
  EXPECT_EQ(samples[0].sample, -1);
  EXPECT_EQ(samples[2].sample, 0);
  EXPECT_EQ(samples[2].values, TuningValues{}) << "the configured values first";
  // The start values' steps: 30 MB in step_seconds.
  EXPECT_NEAR(samples[2].median_step_s, step_seconds(TuningValues{}), 1e-6);
  EXPECT_NEAR(samples[2].score / (30e6 / step_seconds(TuningValues{})), 1, 1e-5);
  ASSERT_EQ(orders.size(), 25u) << "one order after each scored sample";
  for (size_t i = 0; i + 1 < orders.size(); ++i) EXPECT_FALSE(orders[i].final);
  EXPECT_TRUE(orders.back().final);
  EXPECT_EQ(orders.back().values, best);
  EXPECT_NEAR(orders.back().score / (30e6 / 0.010), 1, 1e-5);
  // Each sample ran on the values ordered before it.
  for (size_t i = 1; i < 25; ++i) EXPECT_EQ(samples[2 + i].values, orders[i - 1].values) << i;
  // Done: nothing more is ordered.
  EXPECT_FALSE(tuner.Observe({"a"}, 1, t + std::chrono::seconds(1)).has_value());
}

TEST(AutotuneLog, WritesReadableRows) {
  const std::string path =
      ::testing::TempDir() + "/autotune." + std::to_string(::getpid()) + ".csv";
  {
    Result<std::unique_ptr<AutotuneLog>> log = AutotuneLog::Open(path);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    (*log)->Sample({-1, TuningValues{}, 2.5e9, 0.0125});
    TuningOrder order;
    order.values.fusion_threshold_bytes = 4 << 20;
    order.values.cycle_time_ms = 0.5;
    order.sample = 1;
    (*log)->Applied(order, 17, 240);
    order.final = true;
    order.score = 3e9;
    (*log)->Applied(order, 99, 1200);
  }
  const auto rows = testing::ReadCsv(path);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"event", "sample", "round", "allreduces",
                                               "fusion_threshold_bytes", "cycle_time_ms",
                                               "small_message_bytes", "single_copy_bytes",
                                               "score_bytes_per_s", "median_step_ms"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"warmup", "", "", "", "67108864", "1", "65536",
                                               "1048576", "2.5e+09", "12.5"}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"apply", "1", "17", "240", "4194304", "0.5", "65536",
                                               "1048576", "", ""}));
  EXPECT_EQ(rows[3], (std::vector<std::string>{"final", "1", "99", "1200", "4194304", "0.5",
                                               "65536", "1048576", "3e+09", ""}));
  unlink(path.c_str());
  Result<std::unique_ptr<AutotuneLog>> bad = AutotuneLog::Open("/nonexistent-dir/x.csv");
  EXPECT_EQ(bad.status().message(),
            "cannot write the autotune log '/nonexistent-dir/x.csv': No such file or directory");
}

TEST(AutotuneOrder, RoundTripsInTheCycleMessage) {
  CycleMessage m;
  TuningOrder t;
  t.values = {8 << 20, 2.5, 16 << 10, 4 << 20};
  t.sample = 3;
  t.final = true;
  t.score = 1.25e9;
  m.tuning = t;
  CycleMessage back;
  ASSERT_TRUE(DecodeCycleMessage(EncodeCycleMessage(m), &back));
  ASSERT_TRUE(back.tuning.has_value());
  EXPECT_EQ(back.tuning->values, t.values);
  EXPECT_EQ(back.tuning->sample, 3);
  EXPECT_TRUE(back.tuning->final);
  EXPECT_EQ(back.tuning->score, 1.25e9);
  ASSERT_TRUE(DecodeCycleMessage(EncodeCycleMessage(CycleMessage{}), &back));
  EXPECT_FALSE(back.tuning.has_value());
}

TEST(AutotuneSettings, BadValuesNameTheSetting) {
  auto error = [](const char* variable, const char* value) {
    return ReadRuntimeSettings(testing::FakeEnv({{variable, value}})).status().message();
  };
  EXPECT_EQ(error("COHORT_AUTOTUNE", "yes"), "COHORT_AUTOTUNE='yes' is not 0 or 1");
  EXPECT_EQ(error("COHORT_AUTOTUNE_STEPS_PER_SAMPLE", "0"),
            "COHORT_AUTOTUNE_STEPS_PER_SAMPLE must be between 1 and 100000, not 0");
  EXPECT_EQ(error("COHORT_AUTOTUNE_MAX_SAMPLES", "many"),
            "COHORT_AUTOTUNE_MAX_SAMPLES='many' is not an integer");
  EXPECT_EQ(error("COHORT_AUTOTUNE_WARMUP_SAMPLES", "-1"),
            "COHORT_AUTOTUNE_WARMUP_SAMPLES must be between 0 and 1000, not -1");
  Result<RuntimeSettings> ok =
      ReadRuntimeSettings(testing::FakeEnv({{"COHORT_AUTOTUNE", "1"},
                                            {"COHORT_AUTOTUNE_LOG", "/tmp/a.csv"},
                                            {"COHORT_AUTOTUNE_STEPS_PER_SAMPLE", "5"},
                                            {"COHORT_AUTOTUNE_SEED", "9"},
                                            {"COHORT_SMALL_MESSAGE_BYTES", "16K"}}));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(ok->engine.autotune.enabled);
  EXPECT_EQ(ok->engine.autotune.log_path, "/tmp/a.csv");
  EXPECT_EQ(ok->engine.autotune.steps_per_sample, 5);
  EXPECT_EQ(ok->engine.autotune.seed, 9u);
  EXPECT_EQ(ok->engine.small_message_bytes, 16u << 10) << "tuning starts from the configured value";
  EXPECT_FALSE(ReadRuntimeSettings(testing::FakeEnv({}))->engine.autotune.enabled);
}

}  // namespace
}  // namespace cohort
