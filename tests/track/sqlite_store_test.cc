// The SQLite tracking store: experiments, runs, batches (one transaction,
// immutable params, idempotent batch ids), search, histories, the exclusive
// lock and schema migrations across reopen.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <sqlite3.h>

#include "data/data_test_util.h"
#include "track/search_filter.h"
#include "track/sqlite_store.h"
#include "track/store.h"

namespace cohort::track {
namespace {

using cohort::data::testing::TempDir;

std::unique_ptr<TrackingStore> Open(const std::string& path) {
  auto store = OpenStore("sqlite:" + path);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(*store) : nullptr;
}

std::string NewRun(TrackingStore& store, const std::string& experiment_id,
                   const std::string& name = "", int64_t start = 0) {
  auto run = store.CreateRun(experiment_id, "alice", start, name, {}, "");
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  return run.ok() ? run->info.run_id : "";
}

TEST(SqliteStore, DefaultExperimentAndCreateGet) {
  TempDir dir;
  auto store = Open(dir.Sub("t.db"));
  auto def = store->GetExperiment("0");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->name, "Default");
  auto id = store->CreateExperiment("digits", "", {{"team", "vision"}});
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, "1");
  auto e = store->GetExperimentByName("digits");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->experiment_id, "1");
  EXPECT_EQ(e->artifact_location, "mlflow-artifacts:/1");
  ASSERT_EQ(e->tags.size(), 1u);
  EXPECT_EQ(e->tags[0].value, "vision");

  auto dup = store->CreateExperiment("digits", "", {});
  EXPECT_EQ(dup.status().code(), Status::Code::kAlreadyExists);
  EXPECT_EQ(dup.status().message(), "Experiment(name=digits) already exists.");
  EXPECT_EQ(store->GetExperiment("77").status().message(), "No Experiment with id=77 exists");
  EXPECT_EQ(store->GetExperiment("x'; DROP TABLE runs;--").status().code(),
            Status::Code::kNotFound);
  EXPECT_EQ(store->CreateExperiment("", "", {}).status().message(),
            "Missing value for required parameter 'name'");
}

TEST(SqliteStore, BatchLatestMetricsAndHistory) {
  TempDir dir;
  auto store = Open(dir.Sub("t.db"));
  std::string run = NewRun(*store, "0", "first");
  Batch batch;
  for (int i = 0; i < 10; ++i) batch.metrics.push_back({"loss", 1.0 / (i + 1), 1000 + i, i});
  batch.metrics.push_back({"nan", std::nan(""), 5, 0});
  batch.params = {{"lr", "0.1"}, {"quote", "it's \"x\"; DROP TABLE params;--"}};
  batch.tags = {{"phase", "train"}};
  ASSERT_TRUE(store->LogBatch(run, batch).ok());

  auto got = store->GetRun(run);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->info.run_name, "first");
  EXPECT_EQ(got->info.status, "RUNNING");
  ASSERT_EQ(got->metrics.size(), 2u);
  EXPECT_EQ(got->metrics[0].key, "loss");
  EXPECT_DOUBLE_EQ(got->metrics[0].value, 0.1);
  EXPECT_EQ(got->metrics[0].step, 9);
  EXPECT_TRUE(std::isnan(got->metrics[1].value));
  ASSERT_EQ(got->params.size(), 2u);
  EXPECT_EQ(got->params[1].value, "it's \"x\"; DROP TABLE params;--");

  auto nan_history = store->GetMetricHistory(run, "nan");
  ASSERT_EQ(nan_history->size(), 1u);
  EXPECT_TRUE(std::isnan(nan_history->front().value));
  auto history = store->GetMetricHistory(run, "loss");
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 10u);
  EXPECT_EQ((*history)[3].step, 3);
  EXPECT_EQ((*history)[3].timestamp, 1003);

  // Params are immutable: the same value passes, a new one fails the whole batch.
  Batch again;
  again.params = {{"lr", "0.1"}};
  EXPECT_TRUE(store->LogBatch(run, again).ok());
  Batch change;
  change.metrics = {{"loss", 7, 1, 100}};
  change.params = {{"lr", "0.2"}};
  Status s = store->LogBatch(run, change);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "Changing param values is not allowed. Params were already logged='[{key: 'lr', "
            "old_value: '0.1', new_value: '0.2'}]' for run ID='" +
                run + "'.");
  EXPECT_EQ(store->GetMetricHistory(run, "loss")->size(), 10u);  // rolled back
}

TEST(SqliteStore, BatchIdsMakeReplaysIdempotent) {
  TempDir dir;
  auto store = Open(dir.Sub("t.db"));
  std::string run = NewRun(*store, "0");
  Batch batch;
  batch.batch_id = "client-1:7";
  batch.metrics = {{"acc", 0.5, 10, 1}, {"acc", 0.6, 11, 2}};
  ASSERT_TRUE(store->LogBatch(run, batch).ok());
  batch.metrics.push_back({"acc", 0.7, 12, 3});  // same id: skipped whole
  ASSERT_TRUE(store->LogBatch(run, batch).ok());
  EXPECT_EQ(store->GetMetricHistory(run, "acc")->size(), 2u);
  // The same point logged twice without an id is kept once, as in MLflow.
  Batch plain;
  plain.metrics = {{"acc", 0.5, 10, 1}};
  ASSERT_TRUE(store->LogBatch(run, plain).ok());
  EXPECT_EQ(store->GetMetricHistory(run, "acc")->size(), 2u);
}

TEST(SqliteStore, BatchLimitsAndBadKeysNameTheField) {
  TempDir dir;
  auto store = Open(dir.Sub("t.db"));
  std::string run = NewRun(*store, "0");
  Batch big;
  big.metrics.assign(1001, Metric{"m", 1, 1, 1});
  EXPECT_EQ(store->LogBatch(run, big).message(),
            "A batch logging request can contain at most 1000 metrics. Got 1001 metrics. "
            "Please split up metrics across multiple requests and try again.");
  Batch params;
  params.params.assign(101, Param{"p", "v"});
  EXPECT_EQ(store->LogBatch(run, params).message().substr(0, 60),
            "A batch logging request can contain at most 100 params. Got ");
  Batch key;
  key.metrics = {{"ok", 1, 1, 1}, {std::string(10 << 20, 'k'), 1, 1, 1}};
  Status s = store->LogBatch(run, key);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("for parameter 'metrics[1].key' supplied: length 10485760 exceeds "
                             "the limit of 250"),
            std::string::npos)
      << s.message().substr(0, 300);
  Batch dots;
  dots.tags = {{"../etc", "x"}};
  EXPECT_NE(store->LogBatch(run, dots).message().find("'tags[0].key'"), std::string::npos);
  EXPECT_EQ(store->LogBatch("nope", Batch{}).message(), "Run with id=nope not found");
}

TEST(SqliteStore, SearchFiltersOrdersAndPages) {
  TempDir dir;
  auto store = Open(dir.Sub("t.db"));
  std::vector<std::string> runs;
  for (int i = 0; i < 7; ++i) {
    runs.push_back(NewRun(*store, "0", "r" + std::to_string(i), 1000 + i));
    Batch b;
    b.metrics = {{"loss", 10.0 - i, 1, 1}};
    b.params = {{"opt", i % 2 ? "adam" : "sgd"}};
    ASSERT_TRUE(store->LogBatch(runs.back(), b).ok());
  }
  NewRun(*store, "0", "no-metrics", 2000);

  RunSearch search;
  search.experiment_ids = {"0"};
  search.filter = "params.opt = 'adam' and metrics.loss < 8.5";
  search.order_by = {"metrics.loss ASC"};
  auto page = store->SearchRuns(search);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->items.size(), 2u);  // runs 5 (loss 5) and 3 (loss 7)
  EXPECT_EQ(page->items[0].info.run_name, "r5");
  EXPECT_EQ(page->items[1].info.run_name, "r3");

  // Sorting by a metric puts runs without it last; pages of 3 cover all 8.
  search.filter = "";
  search.order_by = {"metrics.loss DESC"};
  search.max_results = 3;
  std::vector<std::string> names;
  do {
    page = store->SearchRuns(search);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    for (const track::Run& r : page->items) names.push_back(r.info.run_name);
    search.page_token = page->next_page_token;
  } while (!search.page_token.empty());
  EXPECT_EQ(names,
            (std::vector<std::string>{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "no-metrics"}));

  search = RunSearch{};
  search.filter = "attributes.run_name LIKE 'r%' AND tags.`mlflow.runName` != 'r1'";
  search.order_by = {"start_time"};
  page = store->SearchRuns(search);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->items.size(), 6u);
  EXPECT_EQ(page->items[0].info.run_name, "r0");
  EXPECT_EQ(page->items[1].info.run_name, "r2");

  search.filter = "attributes.run_id IN ('" + runs[2] + "', '" + runs[4] + "')";
  EXPECT_EQ(store->SearchRuns(search)->items.size(), 2u);
  search.filter = "params.opt ILIKE 'ADAM'";
  EXPECT_EQ(store->SearchRuns(search)->items.size(), 3u);
  search.filter = "params.opt LIKE 'ADAM'";  // LIKE is case-sensitive, as in MLflow
  EXPECT_EQ(store->SearchRuns(search)->items.size(), 0u);

  ASSERT_TRUE(store->SetRunLifecycle(runs[0], kDeleted).ok());
  search.filter = "";
  EXPECT_EQ(store->SearchRuns(search)->items.size(), 7u);
  search.view = ViewType::kDeletedOnly;
  EXPECT_EQ(store->SearchRuns(search)->items.size(), 1u);

  search.filter = "metrics.loss < 'x'";
  EXPECT_EQ(store->SearchRuns(search).status().message(),
            "Invalid filter 'metrics.loss < 'x'': 'metrics.loss' is compared with a number, "
            "found 'x'");
  search.filter = "metrics.loss < 1 OR params.a = 'b'";
  EXPECT_EQ(store->SearchRuns(search).status().message(),
            "Invalid filter 'metrics.loss < 1 OR params.a = 'b'': expected AND before 'OR' "
            "(only AND joins clauses)");
  search.filter = "";
  search.page_token = "garbage!";
  EXPECT_EQ(store->SearchRuns(search).status().message(), "Invalid page token 'garbage!'");
}

// Searches bigger than the store's query limits (SQLite joins at most 64
// tables, nests expressions 1000 deep, binds 32766 values) are refused as
// bad requests naming the limit, before any SQL is built; at the limit they
// run.
TEST(SqliteStore, SearchLimitsAreRefusedNamingThem) {
  TempDir dir;
  auto store = Open(dir.Sub("t.db"));
  std::string run = NewRun(*store, "0", "r");
  Batch b;
  b.metrics = {{"m0", 1, 1, 1}};
  ASSERT_TRUE(store->LogBatch(run, b).ok());

  RunSearch search;
  for (size_t i = 0; i < kMaxOrderByClauses; ++i) {
    search.order_by.push_back("metrics.m" + std::to_string(i) + " DESC");
  }
  auto page = store->SearchRuns(search);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->items.size(), 1u);
  search.order_by.push_back("params.p");
  Status s = store->SearchRuns(search).status();
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "Invalid order_by: " + std::to_string(kMaxOrderByClauses + 1) +
                             " clauses, more than the limit of " +
                             std::to_string(kMaxOrderByClauses));
  ExperimentSearch experiments;
  experiments.order_by = search.order_by;
  EXPECT_EQ(store->SearchExperiments(experiments).status().message(), s.message());

  search = RunSearch{};
  std::string filter = "metrics.m0 > 0";
  for (size_t i = 1; i < kMaxFilterClauses; ++i)
    filter += " AND params.p" + std::to_string(i) + " != 'x'";
  search.filter = filter;
  page = store->SearchRuns(search);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->items.size(), 0u);  // params.p1 != 'x' needs the param
  search.filter = filter + " AND attributes.run_name = 'r'";
  s = store->SearchRuns(search).status();
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "Invalid filter: more than " + std::to_string(kMaxFilterClauses) +
                             " clauses (the limit)");
  experiments.order_by.clear();
  experiments.filter = "tags.t = 'x'";
  for (size_t i = 0; i < kMaxFilterClauses; ++i) experiments.filter += " AND name != 'x'";
  EXPECT_EQ(store->SearchExperiments(experiments).status().message(), s.message());

  std::string ids = "'" + run + "'";
  for (size_t i = 1; i < kMaxFilterValues; ++i) ids += ", 'x" + std::to_string(i) + "'";
  search.filter = "attributes.run_id IN (" + ids + ")";
  page = store->SearchRuns(search);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->items.size(), 1u);
  search.filter = "attributes.run_id IN (" + ids + ", 'y')";
  EXPECT_EQ(store->SearchRuns(search).status().message(), "Invalid filter: more than " +
                                                              std::to_string(kMaxFilterValues) +
                                                              " values in IN lists (the limit)");
  search.filter = "params.p LIKE '" + std::string(kMaxLikePatternBytes + 1, '%') + "'";
  EXPECT_EQ(store->SearchRuns(search).status().message(),
            "Invalid filter: a LIKE pattern of " + std::to_string(kMaxLikePatternBytes + 1) +
                " bytes, more than the limit of " + std::to_string(kMaxLikePatternBytes));

  search = RunSearch{};
  for (size_t i = 0; i < kMaxSearchExperiments; ++i)
    search.experiment_ids.push_back(std::to_string(i));
  page = store->SearchRuns(search);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->items.size(), 1u);
  search.experiment_ids.push_back("x");
  EXPECT_EQ(store->SearchRuns(search).status().message(),
            "Invalid experiment_ids: " + std::to_string(kMaxSearchExperiments + 1) +
                " ids, more than the limit of " + std::to_string(kMaxSearchExperiments));
}

// A search the database fails is an internal error that says so without the
// SQL or the database's own message (those go to the log).
TEST(SqliteStore, FailedSearchShowsNoSql) {
  TempDir dir;
  const std::string path = dir.Sub("t.db");
  auto store = Open(path);
  NewRun(*store, "0", "r");
  sqlite3* raw = nullptr;  // behind the store's back: the table a sort needs goes away
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "DROP TABLE latest_metrics", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  RunSearch search;
  search.order_by = {"metrics.loss"};
  Status s = store->SearchRuns(search).status();
  EXPECT_EQ(s.code(), Status::Code::kIoError);
  EXPECT_EQ(s.message(),
            "searching runs failed in the tracking store (the server's log has "
            "the details)");
}

TEST(SqliteStore, BulkIntervalKeepsSpikesAndEnds) {
  TempDir dir;
  auto store = Open(dir.Sub("t.db"));
  std::string run = NewRun(*store, "0");
  for (int chunk = 0; chunk < 10; ++chunk) {
    Batch b;
    for (int i = 0; i < 1000; ++i) {
      int step = chunk * 1000 + i;
      b.metrics.push_back({"loss", step == 4321 ? 99.0 : 1.0, step, step});
    }
    ASSERT_TRUE(store->LogBatch(run, b).ok());
  }
  auto points = store->GetMetricHistoryBulkInterval({run}, "loss", 100, std::nullopt, std::nullopt);
  ASSERT_TRUE(points.ok()) << points.status().ToString();
  EXPECT_LE(points->size(), 100u);
  EXPECT_EQ(points->front().metric.step, 0);
  EXPECT_EQ(points->back().metric.step, 9999);
  bool spike = false;
  for (const HistoryPoint& p : *points) spike |= p.metric.step == 4321 && p.metric.value == 99.0;
  EXPECT_TRUE(spike);
  auto window = store->GetMetricHistoryBulkInterval({run}, "loss", 100, 10, 19);
  ASSERT_EQ(window->size(), 10u);
  EXPECT_EQ(window->front().metric.step, 10);
}

// Past 100,000 points the history is downsampled from per-1024-step
// summaries: still exact extremes, the true first and last points, and the
// raw rows of buckets a window cuts.
TEST(SqliteStore, LongHistoryDownsamplesFromBucketSummaries) {
  TempDir dir;
  auto store = Open(dir.Sub("t.db"));
  std::string run = NewRun(*store, "0");
  for (int chunk = 0; chunk < 150; ++chunk) {
    Batch b;
    for (int i = 0; i < 1000; ++i) {
      int step = chunk * 1000 + i;
      double v = step == 77777 ? 99.0 : step == 123456 ? -5.0 : (step % 7) * 0.1;
      if (i == 500) v = std::nan("");  // NaNs count, never extremes
      b.metrics.push_back({"loss", v, step, step});
    }
    ASSERT_TRUE(store->LogBatch(run, b).ok());
  }
  auto check = [&](std::optional<int64_t> first, std::optional<int64_t> last, int64_t want_first,
                   int64_t want_last) {
    // 147 buckets give 294 points: enough for 200, so the buckets are used.
    auto points = store->GetMetricHistoryBulkInterval({run}, "loss", 200, first, last);
    ASSERT_TRUE(points.ok()) << points.status().ToString();
    ASSERT_LE(points->size(), 200u);
    ASSERT_GE(points->size(), 100u);
    EXPECT_EQ(points->front().metric.step, want_first);
    EXPECT_EQ(points->back().metric.step, want_last);
    bool spike = false, dip = false;
    for (size_t i = 0; i < points->size(); ++i) {
      const Metric& m = (*points)[i].metric;
      EXPECT_GE(m.step, want_first);
      EXPECT_LE(m.step, want_last);
      if (i > 0) {
        EXPECT_LE((*points)[i - 1].metric.step, m.step);
      }
      spike |= m.step == 77777 && m.value == 99.0;
      dip |= m.step == 123456 && m.value == -5.0;
    }
    EXPECT_TRUE(spike);
    EXPECT_TRUE(dip);
  };
  check(std::nullopt, std::nullopt, 0, 149999);
  check(1000, 140500, 1000, 140500);
}

// What the refusal of a second opener says about the holder (this test
// process, which holds the store as `held_as`).
std::string HeldByThisProcess(const std::string& opened, const std::string& held_as) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  return "tracking store " + opened + " is open in another process: pid " +
         std::to_string(::getpid()) + " (" + cmdline + ") holds it as " + held_as +
         "; use that server, or another --store";
}

TEST(SqliteStore, SecondOpenIsRefusedAndDataSurvivesReopen) {
  TempDir dir;
  std::string path = dir.Sub("sub/t.db");
  std::string run;
  {
    auto store = Open(path);
    run = NewRun(*store, "0");
    Batch b;
    b.metrics = {{"x", 1, 1, 1}};
    ASSERT_TRUE(store->LogBatch(run, b).ok());
    auto second = OpenStore("sqlite:" + path);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().message(), HeldByThisProcess(path, path));
  }
  auto store = Open(path);
  ASSERT_TRUE(store != nullptr);
  auto got = store->GetRun(run);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->metrics.size(), 1u);
  EXPECT_EQ(SqliteSchemaVersion(), 9);
  EXPECT_EQ(OpenStore("mysql://x").status().message(),
            "tracking store URI 'mysql://x' has an unknown scheme: expected sqlite:PATH or"
            " postgresql://USER@HOST:PORT/DB");
}

// The lock is on the file, not on its name: a symlink or a hard link to a
// store that is open is refused too, naming the holder and the name it
// opened, and what the holder acknowledged is all there afterwards (a second
// writer through a hard link would have written its own WAL beside the
// holder's and lost experiments).
TEST(SqliteStore, LinksToAnOpenStoreAreRefused) {
  TempDir dir;
  const std::string path = dir.Sub("t.db");
  const std::string symlink = dir.Sub("sym.db"), hardlink = dir.Sub("other/hard.db");
  std::vector<std::string> ids;
  {
    auto store = Open(path);
    ASSERT_EQ(::symlink(path.c_str(), symlink.c_str()), 0);
    std::filesystem::create_directories(dir.Sub("other"));
    ASSERT_EQ(::link(path.c_str(), hardlink.c_str()), 0);
    for (int i = 0; i < 3; ++i) {
      auto id = store->CreateExperiment("before-" + std::to_string(i), "", {});
      ASSERT_TRUE(id.ok()) << id.status().ToString();
      ids.push_back(*id);
    }
    for (const std::string& name : {symlink, hardlink}) {
      auto second = OpenStore("sqlite:" + name);
      ASSERT_FALSE(second.ok()) << name;
      EXPECT_EQ(second.status().code(), Status::Code::kAlreadyExists);
      EXPECT_EQ(second.status().message(), HeldByThisProcess(name, path));
    }
    auto id = store->CreateExperiment("after", "", {});
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    ids.push_back(*id);
  }
  // Once the holder is gone, any name opens the one store, with everything.
  auto reopened = Open(hardlink);
  ASSERT_NE(reopened, nullptr);
  for (const std::string& id : ids) EXPECT_TRUE(reopened->GetExperiment(id).ok()) << id;
  EXPECT_EQ(reopened->GetExperimentByName("after")->experiment_id, ids.back());
}

TEST(SqliteStore, SweepJournalAppendsInOrderAndRefusesATakenSeq) {
  TempDir dir;
  std::string path = dir.Sub("t.db");
  {
    auto store = Open(path);
    auto e = store->CreateExperiment("asha", "", {});
    ASSERT_TRUE(e.ok());
    auto none = store->SweepJournal(*e, "asha");
    ASSERT_TRUE(none.ok()) << none.status().ToString();
    EXPECT_TRUE(none->empty());
    for (int i = 0; i < 12; ++i) {  // 10 sorts before 2 as text: order is by number
      Status s = store->AppendSweepRecord(*e, "asha", i, "{\"op\":" + std::to_string(i) + "}");
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
    ASSERT_TRUE(store->AppendSweepRecord(*e, "other", 0, "{}").ok());  // another sweep's own seqs
    Status taken = store->AppendSweepRecord(*e, "asha", 11, "{\"op\":\"again\"}");
    EXPECT_EQ(taken.code(), Status::Code::kAlreadyExists);
    EXPECT_EQ(taken.message(), "Sweep 'asha' of experiment " + *e +
                                   " already has record 11: another controller is running "
                                   "this sweep");
    EXPECT_EQ(store->AppendSweepRecord(*e, "asha", 13, "{}").message(),
              "Invalid value 13 for parameter 'seq' supplied: sweep 'asha' has 12 records, so "
              "the next is 12");
    EXPECT_EQ(store->AppendSweepRecord(*e, "asha", -1, "{}").message(),
              "Invalid value -1 for parameter 'seq' supplied: it must be 0 or more");
    EXPECT_EQ(store->AppendSweepRecord(*e, "", 0, "{}").message(),
              "Missing value for required parameter 'sweep'");
    EXPECT_EQ(store->AppendSweepRecord(*e, "asha", 12, "a\nb").message(),
              "Invalid value for parameter 'record' supplied: it must be one line of 1 to "
              "1048576 bytes");
    EXPECT_EQ(store->AppendSweepRecord("77", "asha", 0, "{}").message(),
              "No Experiment with id=77 exists");
    EXPECT_EQ(store->SweepJournal("77", "asha").status().code(), Status::Code::kNotFound);
  }
  auto store = Open(path);  // committed: it survives a reopen
  auto records = store->SweepJournal("1", "asha");
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ((*records)[i], "{\"op\":" + std::to_string(i) + "}");
  EXPECT_EQ(store->SweepJournal("1", "other")->size(), 1u);
}

TEST(SqliteStore, QueueGrantsTakeTheHigherOfProjectAndStar) {
  TempDir dir;
  auto store = Open(dir.Sub("t.db"));
  ASSERT_TRUE(store->AddUser("alice").ok());
  EXPECT_EQ(*store->QueuePermission("vision", "alice"), "");
  ASSERT_TRUE(store->GrantQueue("vision", "alice", "READ").ok());
  EXPECT_EQ(*store->QueuePermission("vision", "alice"), "READ");
  EXPECT_EQ(*store->QueuePermission("nlp", "alice"), "");
  ASSERT_TRUE(store->GrantQueue("*", "alice", "SUBMIT").ok());
  EXPECT_EQ(*store->QueuePermission("vision", "alice"), "SUBMIT");
  EXPECT_EQ(*store->QueuePermission("nlp", "alice"), "SUBMIT");
  ASSERT_TRUE(store->GrantQueue("*", "alice", "NONE").ok());
  EXPECT_EQ(*store->QueuePermission("nlp", "alice"), "");
  EXPECT_EQ(*store->QueuePermission("vision", "alice"), "READ");
  EXPECT_EQ(store->GrantQueue("vision", "alice", "EDIT").message(),
            "Invalid queue permission 'EDIT': expected READ, SUBMIT or NONE");
  EXPECT_EQ(store->GrantQueue("vision", "bob", "READ").message(), "User 'bob' does not exist.");
  EXPECT_EQ(*store->QueuePermission("vision", "bob"), "");
}

TEST(SqliteStore, AgentCredentialsAreHashedNamedAndRevocable) {
  TempDir dir;
  std::string secret;
  {
    auto store = Open(dir.Sub("t.db"));
    auto created = store->CreateAgentCredential("a1");
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    secret = *created;
    EXPECT_EQ(secret.rfind("cohort_agent_", 0), 0u);
    EXPECT_EQ(secret.size(), 13u + 64u);
    EXPECT_EQ(store->CreateAgentCredential("a1").status().message(),
              "Agent 'a1' already has a credential: revoke it first.");
    ASSERT_TRUE(store->CreateAgentCredential("a0").ok());
    EXPECT_EQ(*store->AgentForCredential(secret), "a1");
    EXPECT_EQ(store->AgentForCredential(secret + "x").status().code(), Status::Code::kNotFound);
    EXPECT_EQ(*store->AgentCredentials(), (std::vector<std::string>{"a0", "a1"}));
  }
  std::ifstream file(dir.Sub("t.db"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.find(secret), std::string::npos);  // only its hash is kept
  auto store = Open(dir.Sub("t.db"));
  EXPECT_EQ(*store->AgentForCredential(secret), "a1");
  ASSERT_TRUE(store->RevokeAgentCredential("a1").ok());
  EXPECT_EQ(store->AgentForCredential(secret).status().code(), Status::Code::kNotFound);
  EXPECT_EQ(store->RevokeAgentCredential("a1").message(), "Agent 'a1' has no credential.");
}

}  // namespace
}  // namespace cohort::track
