// TrackingRun (include/cohort/track.h) on an embedded SQLite store: how a
// run ends when its owner goes away without calling Finish.
#include "cohort/track.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "data/data_test_util.h"
#include "track/store.h"

namespace cohort {
namespace {

using data::testing::TempDir;

// The status the store holds for `run_id` (the client has let go of it).
std::string StatusOf(const std::string& uri, const std::string& run_id) {
  auto store = track::OpenStore(uri);
  EXPECT_TRUE(store.ok()) << store.status().message();
  if (!store.ok()) return "";
  auto run = (*store)->GetRun(run_id);
  EXPECT_TRUE(run.ok()) << run.status().message();
  return run.ok() ? run->info.status : "";
}

TEST(TrackingRun, AnExceptionUnwindingThroughARunEndsItFailed) {
  TempDir dir;
  TrackingOptions options;
  options.uri = "sqlite:" + dir.Sub("t.db");
  options.spool_dir = dir.Sub("spool");
  std::string run_id;
  try {
    auto run = TrackingRun::Start(options);
    ASSERT_TRUE(run.ok()) << run.status().message();
    run_id = (*run)->run_id();
    (*run)->Log({{"loss", 0.5}}, 0);
    throw std::runtime_error("training diverged");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(StatusOf(options.uri, run_id), "FAILED");
  {
    auto run = TrackingRun::Start(options);
    ASSERT_TRUE(run.ok()) << run.status().message();
    run_id = (*run)->run_id();
  }  // left without Finish and without an exception: it ended normally
  EXPECT_EQ(StatusOf(options.uri, run_id), "FINISHED");
}

}  // namespace
}  // namespace cohort
