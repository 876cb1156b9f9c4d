// A pipeline's status document (pipeline/status_document.h) from the
// controller's state: each step's state, datum counts and jobs, and the
// pipeline's own state, as `status --json` prints and the dashboard shows.
#include "pipeline/status_document.h"

#include <gtest/gtest.h>

#include "data/data_test_util.h"
#include "pipeline/state.h"

namespace cohort::pipeline {
namespace {

using nlohmann::json;

PipelineSpec TwoSteps() {
  auto spec = ParseSpec(R"(name: demo
steps:
  - {name: a, inputs: [{dataset: raw, glob: sample}], command: x, output: out}
  - {name: b, inputs: [{step: a}], command: y}
)",
                        "p.yaml", "/data");
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return *spec;
}

json Batch(const std::string& state, std::vector<uint64_t> ids) {
  json datums = json::array();
  for (uint64_t id : ids) datums.push_back({id, id});
  return {{"state", state}, {"datums", datums}, {"whole", false}, {"reason", "exit status 1"}};
}

TEST(PipelineStatusDocument, StepStatesFromTheState) {
  const PipelineSpec spec = TwoSteps();
  json state = {{"pipeline_run", {{"started", 5.0}, {"state", "running"}}},
                {"steps",
                 {{"a",
                   {{"visited", 5.0},
                    {"run",
                     {{"token", "t1"},
                      {"jobs", {7, 8, 9}},
                      {"batches",
                       {Batch("done", {1, 2}), Batch("split", {3, 4}), Batch("failed", {3}),
                        Batch("running", {4})}}}}}},
                  {"b", {{"done", {{"output_commit", "c0"}, {"results", {{"whole", {1}}}}}}}}}}};
  json doc = StatusDocument(spec, state, {}, 42);
  EXPECT_EQ(doc["pipeline"], "demo");
  EXPECT_EQ(doc["state"], "running");
  EXPECT_EQ(doc["controller_pid"], 42);
  const json& a = doc["steps"][0];
  EXPECT_EQ(a["state"], "running");
  EXPECT_EQ(
      a["datums"],
      json({{"done", 2}, {"total", 4}, {"failed", 1}}));  // the split batch's datums count alone
  EXPECT_EQ(a["failed_datums"], json({{"3", "exit status 1"}}));
  EXPECT_EQ(a["jobs"], json({7, 8, 9}));
  EXPECT_EQ(a["inputs"], json::parse(R"([{"name":"RAW","dataset":"/data/raw","ref":"main"}])"));
  // b has a result from an earlier run, but this run has not reached it.
  EXPECT_EQ(doc["steps"][1]["state"], "waiting");
  EXPECT_EQ(doc["steps"][1]["inputs"], json::parse(R"([{"name":"A","step":"a"}])"));
  // With no controller, the last known states; a killed controller's run is stopped.
  doc = StatusDocument(spec, state, {}, 0);
  EXPECT_EQ(doc["state"], "stopped");
  EXPECT_EQ(doc["steps"][1]["state"], "done");
  EXPECT_EQ(doc["steps"][1]["datums"], json({{"done", 1}, {"total", 1}, {"failed", 0}}));
}

TEST(PipelineStatusDocument, DoneFailedCachedAndBroken) {
  const PipelineSpec spec = TwoSteps();
  json state = {{"pipeline_run", {{"started", 5.0}, {"state", "broken"}, {"error", "step 'b': x"}}},
                {"steps",
                 {{"a",
                   {{"outcome", "cached"},
                    {"done", {{"results", {{"1", {1}}}}, {"failed", json::object()}}}}},
                  {"b", {{"error", "x"}, {"done", {{"results", json::object()}}}}}}}};
  json doc = StatusDocument(spec, state, {}, 0);
  EXPECT_EQ(doc["state"], "broken");
  EXPECT_EQ(doc["error"], "step 'b': x");
  EXPECT_EQ(doc["steps"][0]["state"], "cached");
  EXPECT_EQ(doc["steps"][1]["state"], "broken");
  EXPECT_EQ(doc["steps"][1]["error"], "x");
  state["steps"]["a"]["outcome"] = "ran";
  state["steps"]["a"]["done"]["failed"] = {{"2", "exit status 3"}};
  doc = StatusDocument(spec, state, {}, 0);
  EXPECT_EQ(doc["steps"][0]["state"], "failed");
  EXPECT_EQ(doc["steps"][0]["datums"], json({{"done", 1}, {"total", 2}, {"failed", 1}}));
  // b reads its input whole: one datum, whether or not it wrote results.
  state["steps"]["b"] = {{"done", {{"results", json::object()}, {"failed", json::object()}}}};
  EXPECT_EQ(StatusDocument(spec, state, {}, 0)["steps"][1]["datums"],
            json({{"done", 1}, {"total", 1}, {"failed", 0}}));
  EXPECT_EQ(StatusDocument(spec, json::object(), {}, 0)["state"], "waiting");
  EXPECT_EQ(StatusDocument(spec, json::object(), {}, 0)["steps"][1]["datums"],
            json({{"done", 0}, {"total", 0}, {"failed", 0}}));
}

json Record(const std::string& step, const std::string& output, const std::string& commit) {
  return {{"pipeline", "demo"},
          {"step", step},
          {"output", output},
          {"output_commit", commit},
          {"inputs", {{{"name", "RAW"}, {"location", "/data/raw"}, {"commit", "r1"}}}},
          {"jobs", {1}}};
}

TEST(PipelineStatusDocument, CarriesTheLatestOutputCommitsRecords) {
  data::testing::TempDir dir;
  {
    PipelineState state(dir.Sub("state"));
    ASSERT_TRUE(state.Open().ok());
    ASSERT_TRUE(state.AppendProvenance(Record("b", "", "")).ok());  // no output dataset: no commit
    for (size_t i = 0; i < kRecentOutputRecords + 5; ++i)
      ASSERT_TRUE(state.AppendProvenance(Record("a", "/data/out", "c" + std::to_string(i))).ok());
    // A run that changed nothing names c10 again: the later record replaces the earlier.
    json again = Record("a", "/data/out", "c10");
    again["jobs"] = {9};
    ASSERT_TRUE(state.AppendProvenance(again).ok());
    const std::vector<json> kept = state.RecentOutputRecords();
    ASSERT_EQ(kept.size(), kRecentOutputRecords);
    EXPECT_EQ(kept.front()["output_commit"], "c5");  // c0..c4 fell off
    EXPECT_EQ(kept.back(), again);
    EXPECT_EQ(kept[5]["output_commit"], "c11");  // c10 is kept once, as its latest record
  }
  // A new reader (`status --json`, a restarted controller) keeps the same from provenance.jsonl.
  PipelineState state(dir.Sub("state"));
  ASSERT_TRUE(state.Read().ok());
  EXPECT_EQ(state.ProvenanceRecords().size(), kRecentOutputRecords + 7);
  const std::vector<json> kept = state.RecentOutputRecords();
  const json doc = StatusDocument(TwoSteps(), state.json(), kept, 0);
  ASSERT_EQ(doc["commits"].size(), kRecentOutputRecords);
  EXPECT_EQ(doc["commits"][0]["output_commit"], "c5");
  EXPECT_EQ(doc["commits"].back()["jobs"], json({9}));
  EXPECT_EQ(doc["commits"].back()["inputs"][0]["location"], "/data/raw");
  EXPECT_EQ(StatusDocument(TwoSteps(), json::object(), {}, 0)["commits"], json::array());
}

}  // namespace
}  // namespace cohort::pipeline
