// The sweep journal: durable lines, torn last lines, replay onto a fresh study.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "sweep/journal.h"
#include "sweep/replay.h"

namespace cohort::sweep {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("cohort_sweep_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST(FileJournal, KeepsRecordsAcrossReopenAndDropsATornLastLine) {
  const std::string path = TempPath("journal");
  std::filesystem::remove(path);
  {
    auto j = OpenFileJournal(path);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    ASSERT_TRUE((*j)->Append("{\"a\":1}").ok());
    ASSERT_TRUE((*j)->Append("{\"b\":2}").ok());
    EXPECT_EQ((*j)->Append("two\nlines").message(), "journal record holds a newline");
  }
  {
    std::ofstream torn(path, std::ios::app);
    torn << "{\"c\":";  // a crash in the middle of a write
  }
  auto j = OpenFileJournal(path);
  ASSERT_TRUE(j.ok());
  auto records = (*j)->Records();
  ASSERT_TRUE(records.ok());
  EXPECT_EQ(*records, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
  ASSERT_TRUE((*j)->Append("{\"d\":4}").ok());  // after the cut, not glued to the torn bytes
  EXPECT_EQ(*(*j)->Records(), (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "{\"d\":4}"}));
  std::filesystem::remove(path);
}

StudyOptions AshaOptions() {
  StudyOptions o;
  o.algorithm = "asha";
  o.seed = 3;
  ParamSpec x;
  x.name = "x";
  o.space.params.push_back(x);
  o.budget.trials = 12;
  o.budget.min_resource = 1;
  o.budget.max_resource = 9;
  return o;
}

// Drives a study like the controller does, journaling every call.
TEST(Replay, RebuildsTheStudyRungsAndAll) {
  auto live = std::move(*Study::Create(AshaOptions()));
  std::vector<std::string> records{StartRecord(42)};
  std::vector<int64_t> asked;
  for (int round = 0; round < 30; ++round) {
    auto t = live->Ask();
    if (!t) break;
    records.push_back(AskRecord(t->id));
    double x = std::get<double>(t->params.at("x"));
    if (t->id == 4) continue;  // left running: the controller "dies" with it
    for (int64_t step = t->resumed ? live->Trials()[t->id].last_step + 1 : 1;; ++step) {
      double loss = x / step;
      Decision d = *live->Report(t->id, loss, step);
      records.push_back(ReportRecord(t->id, step, loss, d));
      if (d != Decision::kContinue) break;
    }
  }
  auto fresh = std::move(*Study::Create(AshaOptions()));
  auto replay = Replay(records, 42, *fresh);
  ASSERT_TRUE(replay.ok()) << replay.status().ToString();
  EXPECT_TRUE(replay->started);
  EXPECT_EQ(replay->running, std::set<int64_t>{4});
  ASSERT_EQ(fresh->Trials().size(), live->Trials().size());
  for (size_t i = 0; i < live->Trials().size(); ++i) {
    EXPECT_EQ(fresh->Trials()[i].state, live->Trials()[i].state) << i;
    EXPECT_EQ(fresh->Trials()[i].trial.resource, live->Trials()[i].trial.resource) << i;
    EXPECT_EQ(fresh->Trials()[i].trial.params, live->Trials()[i].trial.params) << i;
  }
  // Both continue identically.
  auto a = live->Ask(), b = fresh->Ask();
  ASSERT_EQ(a.has_value(), b.has_value());
  if (a) {
    EXPECT_EQ(a->id, b->id);
  }
}

TEST(Replay, RejectsAnotherSpecsJournal) {
  auto study = std::move(*Study::Create(AshaOptions()));
  auto replay = Replay({StartRecord(1)}, 2, *study);
  ASSERT_FALSE(replay.ok());
  EXPECT_EQ(replay.status().message(),
            "journal record 1: the spec changed since this sweep started; keep the spec, or start "
            "a new sweep (another name or --dir)");
  auto bad = Replay({StartRecord(2), "{\"op\":\"ask\"}"}, 2, *study);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("journal record 2: malformed record: ", 0), 0u)
      << bad.status().message();
}

// The tracking observer reads "run" records after replay without checking
// their fields again, so replay refuses a malformed one (it used to pass and
// then abort the controller with an uncaught json type_error).
TEST(Replay, RejectsMalformedRunRecords) {
  for (const char* record :
       {R"({"op":"run","trial":"three","run":"abc"})", R"({"op":"run","trial":3})",
        R"({"op":"run","sweep":7,"run":"abc"})", R"({"op":"run","run":"abc"})",
        R"({"op":"run","trial":3,"run":"abc","rungs":[1,3]})"}) {
    auto study = std::move(*Study::Create(AshaOptions()));
    auto replay = Replay({StartRecord(2), record}, 2, *study);
    ASSERT_FALSE(replay.ok()) << record;
    EXPECT_EQ(replay.status().message().rfind("journal record 2: malformed run record: ", 0), 0u)
        << replay.status().message();
  }
  auto study = std::move(*Study::Create(AshaOptions()));
  EXPECT_TRUE(Replay({StartRecord(2), R"({"op":"run","sweep":"s1","run":"abc"})",
                      R"({"op":"run","trial":0,"run":"def","rungs":"1,3,9"})"},
                     2, *study)
                  .ok());
}

}  // namespace
}  // namespace cohort::sweep
