// Multi-process tests of the engine: asynchronous named operations under
// `cohort run`, over shared memory and forced TCP, with fusion on and off.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "support/child_process.h"
#include "support/trace_json.h"

namespace cohort::testing {
namespace {

Finished RunEngineJob(int np, const std::string& transport, const std::vector<std::string>& args,
                      std::map<std::string, std::string> env = {}) {
  std::vector<std::string> cmd = {"run",       "-np", std::to_string(np),
                                  "--timeout", "60",  "--transport",
                                  transport,   "--",  TestBinary("engine_worker")};
  cmd.insert(cmd.end(), args.begin(), args.end());
  return RunCohort(cmd, 120, env);
}

int CountLines(const std::string& text, const std::string& part) {
  int n = 0;
  for (const std::string& line : Lines(text)) n += Contains(line, part) ? 1 : 0;
  return n;
}

struct Shape {
  int np;
  std::string transport;
};

class EngineJob : public ::testing::TestWithParam<Shape> {};

// Thousands of tensors in a different random order on every rank: exact.
TEST_P(EngineJob, RandomOrderThousandsOfTensorsExact) {
  Finished f = RunEngineJob(GetParam().np, GetParam().transport, {"random", "3000"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "3000 tensors exact"), GetParam().np);
}

// Every mismatch errors on every rank, naming the ranks; others carry on.
TEST_P(EngineJob, MismatchesNameTheRanksAndOthersComplete) {
  Finished f = RunEngineJob(GetParam().np, GetParam().transport, {"mismatch"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "ranks disagree on the data type"), GetParam().np) << f.out;
  EXPECT_EQ(CountLines(f.out, "rank 1: [9]"), GetParam().np) << f.out;
}

TEST_P(EngineJob, AllgatherWithDifferentFirstDimensions) {
  Finished f = RunEngineJob(GetParam().np, GetParam().transport, {"allgather"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "allgather ok"), GetParam().np);
}

TEST_P(EngineJob, GroupedAllreduce) {
  Finished f = RunEngineJob(GetParam().np, GetParam().transport, {"grouped"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
}

TEST_P(EngineJob, ReduceScatterAndAlltoallWithSplits) {
  Finished f = RunEngineJob(GetParam().np, GetParam().transport, {"scatter"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "scatter ok"), GetParam().np);
}

// Uneven step counts: joined ranks contribute the op's identity.
TEST_P(EngineJob, JoinWithUnevenStepCounts) {
  Finished f = RunEngineJob(GetParam().np, GetParam().transport, {"join"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "join ok"), GetParam().np);
}

TEST_P(EngineJob, BlockingCallsRunThroughTheEngine) {
  Finished f = RunEngineJob(GetParam().np, GetParam().transport, {"sync"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
}

TEST_P(EngineJob, Float16AndBFloat16Compression) {
  Finished f = RunEngineJob(GetParam().np, GetParam().transport, {"compression"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "compression ok"), GetParam().np);
}

TEST_P(EngineJob, UnmatchedNameFailsAtShutdownNamingTheRank) {
  Finished f = RunEngineJob(GetParam().np, GetParam().transport, {"unmatched"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "never submitted by rank 1 (host"), GetParam().np - 1) << f.out;
}

// A rank that shuts down while others wait for it fails their tensors at
// once (not at COHORT_TIMEOUT), naming it: as a tensor it never submitted,
// or, where its shutdown ended a rank's engine before that rank submitted,
// as the refused submission.
TEST_P(EngineJob, ShutdownOfOneRankFailsWhatWaitsForIt) {
  Finished f = RunEngineJob(GetParam().np, GetParam().transport, {"early_shutdown"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  const std::string last = std::to_string(GetParam().np - 1);
  EXPECT_EQ(CountLines(f.out, "never submitted by rank " + last) +
                CountLines(f.out, "cohort was shut down by rank " + last),
            GetParam().np - 1)
      << f.out << f.err;
}

// Any rank's shutdown ends the engine on every rank (as Horovod's): it
// returns without waiting for the others, whose waiting and later operations
// fail at once naming it; Init on each of them then starts a new runtime.
TEST_P(EngineJob, ShutdownOfOneRankEndsTheEngineEverywhereAndInitRestarts) {
  Finished f = RunEngineJob(GetParam().np, GetParam().transport, {"restart"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "shutdown restart ok"), GetParam().np) << f.out << f.err;
}

// Ranks that wait for each other's tensors fail after COHORT_DEADLOCK_TIME
// (not COHORT_TIMEOUT), every one naming who waits for what; then restart.
TEST_P(EngineJob, DeadlockedRanksFailNamingWhoWaitsForWhatThenRestart) {
  Finished f = RunEngineJob(GetParam().np, GetParam().transport, {"deadlock"},
                            {{"COHORT_DEADLOCK_TIME", "0.5"}});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "deadlock restart ok"), GetParam().np) << f.out << f.err;
  EXPECT_LT(f.seconds, 30);
}

INSTANTIATE_TEST_SUITE_P(Shapes, EngineJob,
                         ::testing::Values(Shape{2, "auto"}, Shape{3, "auto"}, Shape{2, "tcp"},
                                           Shape{3, "tcp"}),
                         [](const auto& info) {
                           return std::to_string(info.param.np) + "ranks_" + info.param.transport;
                         });

// Disjoint and overlapping process sets run concurrently with the whole job:
// 4 ranks over shared memory ({0,1}, {2,3}, {0,3}) and 3 over TCP ({0},
// {1,2}, {0,2}).
TEST(EngineProcessSets, RunConcurrentlyWithExactResultsAndClearErrors) {
  for (const Shape& shape : {Shape{4, "auto"}, Shape{3, "tcp"}}) {
    Finished f = RunEngineJob(shape.np, shape.transport, {"process_sets"});
    EXPECT_EQ(f.exit_code, 0) << shape.np << " ranks, " << shape.transport << "\n"
                              << f.out << f.err;
    EXPECT_EQ(CountLines(f.out, "process sets ok"), shape.np) << f.out << f.err;
  }
}

// The stall inspector reports the missing rank, then fails the tensor on
// every rank that submitted it.
TEST(EngineStall, MissingRankIsReportedThenFailed) {
  const std::string fifo = ::testing::TempDir() + "/stall.fifo." + std::to_string(::getpid());
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Finished f =
      RunEngineJob(3, "auto", {"stall", fifo},
                   {{"COHORT_STALL_CHECK_TIME", "0.2"}, {"COHORT_STALL_SHUTDOWN_TIME", "1"}});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_TRUE(Contains(f.err, "stall inspector: tensor 'late' has waited")) << f.err;
  EXPECT_TRUE(Contains(f.err, "not yet submitted by rank 1 (host")) << f.err;
  EXPECT_EQ(CountLines(f.out, "stalled: rank 1 (host"), 2) << f.out;
  ::unlink(fifo.c_str());
}

// A rank killed mid-step: the others' pending operations fail with an error
// that names it, long before COHORT_TIMEOUT.
TEST(EngineFailure, KilledRankFailsPendingHandlesOnTheOthers) {
  auto workers = StartWithTorchrunVariables(3, {TestBinary("engine_worker"), "die"}, {});
  for (int r = 0; r < 2; ++r) {
    Finished f = workers[r]->Finish(Deadline::AfterSeconds(30));
    EXPECT_EQ(f.exit_code, 0) << "rank " << r << ": " << f.out << f.err;
    EXPECT_TRUE(Contains(f.out, "rank 2 (host ")) << f.out;
    EXPECT_LT(f.seconds, 20);
  }
}

// Names of the events on each tensor's row of a trace.
std::map<std::string, std::vector<std::string>> EventsByTensor(const std::vector<Json>& events) {
  std::map<int, std::string> row_name;
  for (const Json& e : events) {
    if (e.Str("ph") == "M" && e.Str("name") == "process_name" && e.Find("args") != nullptr) {
      row_name[static_cast<int>(e.Num("pid"))] = e.Find("args")->Str("name");
    }
  }
  std::map<std::string, std::vector<std::string>> out;
  for (const Json& e : events) {
    if (e.Str("ph") == "M") continue;
    const std::string& tensor = row_name[static_cast<int>(e.Num("pid"))];
    out[tensor].push_back(e.Str("ph") + ":" + (e.Str("ph") == "E" ? "" : e.Str("name")));
  }
  return out;
}

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// A timeline from the environment: every rank's file is valid JSON with
// negotiation, each rank's ready moment and the collective per tensor.
// Over TCP fused tensors are copied through the fusion buffer (spans for the
// copies); over shared memory they are reduced in place, with no copies.
TEST(EngineTimeline, FromEnvironmentHasTheExpectedSpans) {
  const std::string dir = ::testing::TempDir();
  for (const std::string transport : {"tcp", "auto"}) {
    const std::string path = dir + "/env_trace_" + transport + ".{rank}.json";
    Finished f = RunEngineJob(2, transport, {"random", "200"}, {{"COHORT_TIMELINE", path}});
    ASSERT_EQ(f.exit_code, 0) << f.out << f.err;
    for (int r = 0; r < 2; ++r) {
      std::vector<Json> events =
          ParseTrace(ReadFile(dir + "/env_trace_" + transport + "." + std::to_string(r) + ".json"));
      auto by_tensor = EventsByTensor(events);
      ASSERT_TRUE(by_tensor.count("grad.7")) << "rank " << r;
      const std::vector<std::string>& e = by_tensor["grad.7"];
      EXPECT_TRUE(Has(e, "B:NEGOTIATE_allreduce")) << r;
      EXPECT_TRUE(Has(e, "E:")) << r;
      EXPECT_TRUE(Has(e, "i:rank 0 ready") && Has(e, "i:rank 1 ready")) << r;
      EXPECT_TRUE(Has(e, "X:QUEUE")) << r;
      EXPECT_TRUE(Has(e, "X:ALLREDUCE")) << r;
      int copied = 0, phases = 0;
      for (auto& [name, ev] : by_tensor) {
        copied += Has(ev, "X:MEMCPY_IN_FUSION_BUFFER") ? 1 : 0;
        phases += Has(ev, transport == "tcp" ? "X:RECURSIVE_DOUBLING" : "X:SHM_ALLREDUCE") ? 1 : 0;
      }
      EXPECT_GT(phases, 0) << "the algorithm's phases are spans too";
      if (transport == "tcp") {
        EXPECT_GT(copied, 0) << "small tensors are fused through the fusion buffer";
      } else {
        EXPECT_EQ(copied, 0) << "shared memory reduces fused tensors in place";
      }
    }
  }
}

// Which path a one-host collective took shows in the timeline: CMA_ALLREDUCE
// where the ranks copy once (single copy from 1 byte on), SHM_ALLREDUCE
// with COHORT_SHM_SINGLE_COPY=off.
TEST(EngineTimeline, SingleCopyPathIsNamed) {
  const std::string dir = ::testing::TempDir();
  for (const std::string mode : {"auto", "off"}) {
    const std::string path = dir + "/single_copy_" + mode + ".{rank}.json";
    Finished f = RunEngineJob(2, "auto", {"random", "100"},
                              {{"COHORT_TIMELINE", path},
                               {"COHORT_SHM_SINGLE_COPY", mode},
                               {"COHORT_SHM_SINGLE_COPY_BYTES", "1"}});
    ASSERT_EQ(f.exit_code, 0) << f.out << f.err;
    int cma = 0, shm = 0;
    for (auto& [name, ev] :
         EventsByTensor(ParseTrace(ReadFile(dir + "/single_copy_" + mode + ".0.json")))) {
      cma += Has(ev, "X:CMA_ALLREDUCE") ? 1 : 0;
      shm += Has(ev, "X:SHM_ALLREDUCE") ? 1 : 0;
    }
    EXPECT_EQ(mode == "auto" ? shm : cma, 0) << mode;
    EXPECT_GT(mode == "auto" ? cma : shm, 0) << mode;
  }
}

// Started and stopped at run time: only what ran in between is recorded.
TEST(EngineTimeline, StartAndStopAtRunTime) {
  const std::string path = ::testing::TempDir() + "/api_trace.json";  // no {rank}: rank 0 only
  Finished f = RunEngineJob(2, "auto", {"timeline", path});
  ASSERT_EQ(f.exit_code, 0) << f.out << f.err;
  auto by_tensor = EventsByTensor(ParseTrace(ReadFile(path)));
  EXPECT_TRUE(by_tensor.count("traced.3"));
  EXPECT_FALSE(by_tensor.count("untraced.13"));
}

// Repeated steps hit the response cache; changed shapes and new names miss it
// or evict; results stay exact with the cache large, tiny and off.
TEST(EngineCache, StaysCorrectWhenTheNamesChange) {
  for (const std::string capacity : {"1024", "7", "0"}) {
    Finished f = RunEngineJob(3, "auto", {"steps"},
                              {{"COHORT_CACHE_CAPACITY", capacity}, {"COHORT_LOG_LEVEL", "debug"}});
    EXPECT_EQ(f.exit_code, 0) << capacity << "\n" << f.out << f.err;
    EXPECT_EQ(CountLines(f.out, "steps ok"), 3) << capacity;
    // The repeated steps really are announced from the cache (and never with it off).
    EXPECT_EQ(Contains(f.err, "announcements from the response cache"), capacity != "0") << f.err;
  }
}

// Fusion changes how tensors are packed, never the results.
TEST(EngineFusion, OffAndTinyThresholdGiveTheSameExactResults) {
  for (const char* threshold : {"0", "4K", "64M"}) {
    Finished f =
        RunEngineJob(2, "auto", {"random", "1000"}, {{"COHORT_FUSION_THRESHOLD", threshold}});
    EXPECT_EQ(f.exit_code, 0) << threshold << "\n" << f.out << f.err;
    EXPECT_EQ(CountLines(f.out, "1000 tensors exact"), 2) << threshold;
  }
}

// A rank whose announcement waits for a lagging rank joins the next round at
// once instead of idling a cycle time (2 s here), so the lagging rank's
// submission completes in a round trip, not a cycle time.
TEST(EngineCycle, RanksWaitingForALaggingRankDoNotIdleACycle) {
  Finished f = RunEngineJob(3, "auto", {"lagging"}, {{"COHORT_CYCLE_TIME", "2000"}});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "lagging ok"), 3) << f.out << f.err;
  const std::string marker = "median wait ";
  const size_t at = f.out.find(marker);
  ASSERT_NE(at, std::string::npos) << f.out;
  EXPECT_LT(std::stod(f.out.substr(at + marker.size())), 500.0) << f.out;
}

}  // namespace
}  // namespace cohort::testing
