// ExperimentActivities: the run counts and last activity the dashboard's
// projects page shows (SQLite; PostgresStore runs the same SQL).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "data/data_test_util.h"
#include "track/sqlite_store.h"
#include "track/store.h"

namespace cohort::track {
namespace {

using cohort::data::testing::TempDir;

std::string NewRun(TrackingStore& store, const std::string& experiment_id, const std::string& name,
                   int64_t start) {
  auto run = store.CreateRun(experiment_id, "alice", start, name, {}, "");
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  return run.ok() ? run->info.run_id : "";
}

TEST(ExperimentActivities, CountActiveRunsAndTheLastThingThatHappened) {
  TempDir dir;
  auto opened = OpenStore("sqlite:" + dir.Sub("t.db"));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<TrackingStore> store = std::move(*opened);
  auto busy = store->CreateExperiment("busy", "", {});
  auto idle = store->CreateExperiment("idle", "", {});
  ASSERT_TRUE(busy.ok() && idle.ok());
  std::string a = NewRun(*store, *busy, "a", 1000);
  std::string b = NewRun(*store, *busy, "b", 2000);
  std::string c = NewRun(*store, *busy, "c", 3000);
  std::string gone = NewRun(*store, *busy, "gone", 9000);
  ASSERT_TRUE(store->UpdateRun(a, std::string("FINISHED"), int64_t{5000}, std::nullopt).ok());
  ASSERT_TRUE(store->UpdateRun(b, std::string("FAILED"), int64_t{2500}, std::nullopt).ok());
  Batch batch;
  batch.metrics = {{"loss", 0.5, 7000, 1},
                   {"loss", 0.9, 6500, 0}};  // the latest by step is at 7000
  ASSERT_TRUE(store->LogBatch(c, batch).ok());
  Batch late;
  late.metrics = {{"x", 1, 99999, 0}};
  ASSERT_TRUE(store->LogBatch(gone, late).ok());
  ASSERT_TRUE(store->SetRunLifecycle(gone, kDeleted).ok());  // a deleted run counts for nothing

  auto got = store->ExperimentActivities({*idle, *busy, "404", "x'--"});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 4u);
  const ExperimentActivity& i = (*got)[0];
  EXPECT_EQ(i.experiment_id, *idle);
  EXPECT_EQ(i.runs, 0);
  EXPECT_EQ(i.last_activity_time, 0);
  const ExperimentActivity& e = (*got)[1];
  EXPECT_EQ(e.experiment_id, *busy);
  EXPECT_EQ(e.runs, 3);
  EXPECT_EQ(e.running, 1);
  EXPECT_EQ(e.finished, 1);
  EXPECT_EQ(e.failed, 1);
  EXPECT_EQ(e.killed, 0);
  EXPECT_EQ(e.last_activity_time, 7000);  // c's metric, after a's end (5000)
  for (size_t k : {2u, 3u}) {             // unknown ids, a malformed one too: zeros
    EXPECT_EQ((*got)[k].runs, 0);
    EXPECT_EQ((*got)[k].last_activity_time, 0);
  }
  ASSERT_TRUE(store->UpdateRun(c, std::string("KILLED"), int64_t{8000}, std::nullopt).ok());
  got = store->ExperimentActivities({*busy});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].killed, 1);
  EXPECT_EQ((*got)[0].running, 0);
  EXPECT_EQ((*got)[0].last_activity_time, 8000);
  EXPECT_EQ((*got)[0].runs, 3);
  EXPECT_EQ((*got)[0].experiment_id, *busy);
}

}  // namespace
}  // namespace cohort::track
