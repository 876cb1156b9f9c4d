// Tests of the Chrome-trace timeline: the file is strict JSON after Close and
// loadable before it, rows per tensor, nesting, escaping, concurrency, limits.
#include "engine/timeline.h"
#include "support/trace_json.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace cohort {
namespace {

using testing::Json;
using testing::JsonParser;
using testing::ParseTrace;
using testing::ReadFile;

// A fresh path per test under the test temp dir, removed at the end.
class TempPath {
 public:
  explicit TempPath(const std::string& name) {
    const char* dir = std::getenv("TEST_TMPDIR");
    path_ = std::string(dir != nullptr ? dir : "/tmp") + "/cohort_timeline_" +
            std::to_string(::getpid()) + "_" + name + ".json";
  }
  ~TempPath() { ::unlink(path_.c_str()); }
  const std::string& str() const { return path_; }

 private:
  std::string path_;
};

std::unique_ptr<Timeline> OpenOrDie(const std::string& path, int rank,
                                    const TimelineOptions& options = {}) {
  Result<std::unique_ptr<Timeline>> timeline = Timeline::Open(path, rank, options);
  EXPECT_TRUE(timeline.ok()) << timeline.status().ToString();
  return timeline.ok() ? std::move(timeline).value() : nullptr;
}

// Tensor name -> pid, from the process_name metadata rows.
std::map<std::string, int> PidsByName(const std::vector<Json>& events) {
  std::map<std::string, int> pids;
  for (const Json& e : events) {
    if (e.Str("ph") == "M" && e.Str("name") == "process_name") {
      pids[e.Find("args")->Str("name")] = static_cast<int>(e.Num("pid"));
    }
  }
  return pids;
}

// The non-metadata events on one pid, in file order.
std::vector<Json> EventsOn(const std::vector<Json>& events, int pid) {
  std::vector<Json> out;
  for (const Json& e : events) {
    if (e.Str("ph") != "M" && e.Num("pid") == pid) out.push_back(e);
  }
  return out;
}

size_t CountRecorded(const std::vector<Json>& events) {
  size_t n = 0;
  for (const Json& e : events) n += e.Str("ph") != "M" && e.Num("pid") != 0;
  return n;
}

TEST(Timeline, ValidJsonWithRowsPerTensorAndNestedPhases) {
  TempPath path("rows");
  auto timeline = OpenOrDie(path.str(), 3);
  ASSERT_NE(timeline, nullptr);
  Clock::time_point t = Clock::now();
  auto us = [t](int n) { return t + std::chrono::microseconds(n); };
  timeline->Begin("grad.a", "NEGOTIATE", us(0));
  timeline->Instant("grad.a", "rank 1 ready", us(5), TimelineArgs().Int("rank", 1));
  timeline->Begin("grad.b", "NEGOTIATE", us(6));
  timeline->End("grad.a", us(10));
  timeline->Begin("grad.a", "ALLREDUCE", us(20));
  timeline->Span("grad.a", "COPY_IN", us(21), us(21) + std::chrono::nanoseconds(2500),
                 TimelineArgs().Int("bytes", 4096));
  timeline->End("grad.a", us(40));
  timeline->End("grad.b", us(41));
  timeline->End("grad.b", us(42));  // unmatched: not written
  ASSERT_TRUE(timeline->Close().ok());
  EXPECT_EQ(timeline->events_written(), 8u);

  std::vector<Json> events = ParseTrace(ReadFile(path.str()));
  std::map<std::string, int> pids = PidsByName(events);
  ASSERT_EQ(pids.size(), 3u);  // pid 0 (the timeline's own row) and two tensors
  EXPECT_EQ(pids["cohort rank 3"], 0);
  EXPECT_EQ(pids["grad.a"], 1);
  EXPECT_EQ(pids["grad.b"], 2);
  int thread_names = 0;
  for (const Json& e : events) {
    EXPECT_EQ(e.Num("tid"), 3) << "every row is on the rank's tid";
    if (e.Str("name") == "thread_name") {
      EXPECT_EQ(e.Find("args")->Str("name"), "rank 3");
      ++thread_names;
    }
  }
  EXPECT_EQ(thread_names, 3);

  std::vector<Json> a = EventsOn(events, 1);
  std::vector<std::string> phs, names;
  for (const Json& e : a) phs.push_back(e.Str("ph"));
  EXPECT_EQ(phs, (std::vector<std::string>{"B", "i", "E", "B", "X", "E"}));
  EXPECT_EQ(a[0].Str("name"), "NEGOTIATE");
  EXPECT_EQ(a[1].Find("args")->Num("rank"), 1);
  EXPECT_EQ(a[3].Str("name"), "ALLREDUCE");
  EXPECT_EQ(a[4].Str("name"), "COPY_IN");
  EXPECT_EQ(a[4].Num("dur"), 2.5);
  EXPECT_EQ(a[4].Find("args")->Num("bytes"), 4096);
  // Relative microseconds: differences are exact even though the origin is
  // the (unknown) moment of Open.
  EXPECT_NEAR(a[2].Num("ts") - a[0].Num("ts"), 10, 1e-6);
  EXPECT_NEAR(a[5].Num("ts") - a[3].Num("ts"), 20, 1e-6);
  EXPECT_GE(a[0].Num("ts"), -1e6);
  EXPECT_LE(a[0].Num("ts"), 1e6);

  std::vector<Json> b = EventsOn(events, 2);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].Str("ph"), "B");
  EXPECT_EQ(b[1].Str("ph"), "E");
}

TEST(Timeline, EscapesNames) {
  TempPath path("escape");
  const std::string tensor = "layer\"3\"\\w\nx\t\x01\x1f/é";
  const std::string phase = "ph\"ase\\\r";
  auto timeline = OpenOrDie(path.str(), 0);
  ASSERT_NE(timeline, nullptr);
  timeline->Span(tensor, phase, Clock::now(), Clock::now());
  ASSERT_TRUE(timeline->Close().ok());

  std::vector<Json> events = ParseTrace(ReadFile(path.str()));
  std::map<std::string, int> pids = PidsByName(events);
  ASSERT_EQ(pids.count(tensor), 1u);
  std::vector<Json> on_row = EventsOn(events, pids[tensor]);
  ASSERT_EQ(on_row.size(), 1u);
  EXPECT_EQ(on_row[0].Str("name"), phase);

  std::string quoted;
  AppendJsonString(&quoted, "a\"b\\c\n\x02");
  EXPECT_EQ(quoted, R"("a\"b\\c\n\u0002")");
}

TEST(Timeline, TypedArgsAreWrittenWithTheirTypes) {
  EXPECT_EQ(TimelineArgs().json(), "");
  EXPECT_EQ(TimelineArgs().Int("n", -3).Bool("in_place", true).Text("e", "a\"b").json(),
            R"({"n":-3,"in_place":true,"e":"a\"b"})");

  TempPath path("args");
  auto timeline = OpenOrDie(path.str(), 0);
  ASSERT_NE(timeline, nullptr);
  // A message with every character JSON must escape, as an error's text may hold.
  const std::string error = "rank 1: \"x\"}\\\n\x01{";
  timeline->Instant("t", "ERROR", Clock::now(), TimelineArgs().Text("error", error));
  timeline->Span("t", "ALLREDUCE", Clock::now(), Clock::now(),
                 TimelineArgs()
                     .Int("fused_tensors", 161)
                     .Int("fused_bytes", int64_t{1} << 40)
                     .Bool("in_place", false));
  timeline->Instant("t", "plain", Clock::now());
  ASSERT_TRUE(timeline->Close().ok());

  std::vector<Json> row = EventsOn(ParseTrace(ReadFile(path.str())), 1);
  ASSERT_EQ(row.size(), 3u);
  EXPECT_EQ(row[0].Find("args")->Str("error"), error);
  const Json* fused = row[1].Find("args");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->Num("fused_tensors"), 161);
  EXPECT_EQ(fused->Num("fused_bytes"), static_cast<double>(int64_t{1} << 40));
  ASSERT_NE(fused->Find("in_place"), nullptr);
  EXPECT_EQ(fused->Find("in_place")->type, Json::Type::kBool);
  EXPECT_FALSE(fused->Find("in_place")->boolean);
  EXPECT_EQ(row[2].Find("args"), nullptr) << "no args, no args object";
}

TEST(Timeline, ConcurrentRecordingKeepsEveryEvent) {
  TempPath path("concurrent");
  auto timeline = OpenOrDie(path.str(), 1);
  ASSERT_NE(timeline, nullptr);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 10000;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&timeline, i] {
      const std::string tensor = "grad." + std::to_string(i);
      for (int k = 0; k < kPerThread / 2; ++k) {
        timeline->Begin(tensor, "ALLREDUCE", Clock::now());
        timeline->End(tensor, Clock::now());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(timeline->Close().ok());
  ASSERT_EQ(timeline->events_dropped(), 0u);
  EXPECT_EQ(timeline->events_written(), uint64_t{kThreads} * kPerThread);

  std::vector<Json> events = ParseTrace(ReadFile(path.str()));
  EXPECT_EQ(CountRecorded(events), size_t{kThreads} * kPerThread);
  std::map<std::string, int> pids = PidsByName(events);
  for (int i = 0; i < kThreads; ++i) {
    std::vector<Json> row = EventsOn(events, pids["grad." + std::to_string(i)]);
    ASSERT_EQ(row.size(), size_t{kPerThread});
    for (size_t k = 0; k < row.size(); ++k) {
      ASSERT_EQ(row[k].Str("ph"), k % 2 == 0 ? "B" : "E") << "row " << i << " event " << k;
    }
  }
}

TEST(Timeline, RecordingAfterCloseDoesNothing) {
  TempPath path("after_close");
  auto timeline = OpenOrDie(path.str(), 0);
  ASSERT_NE(timeline, nullptr);
  timeline->Instant("t", "before", Clock::now());
  ASSERT_TRUE(timeline->Close().ok());
  const std::string closed = ReadFile(path.str());
  timeline->Instant("t", "after", Clock::now());
  timeline->Begin("t", "after", Clock::now());
  timeline->Span("u", "after", Clock::now(), Clock::now());
  EXPECT_TRUE(timeline->Close().ok());  // idempotent
  timeline.reset();
  EXPECT_EQ(ReadFile(path.str()), closed);
  EXPECT_EQ(CountRecorded(ParseTrace(closed)), 1u);
}

TEST(Timeline, CloseWhileOtherThreadsRecord) {
  TempPath path("close_race");
  auto timeline = OpenOrDie(path.str(), 0);
  ASSERT_NE(timeline, nullptr);
  std::atomic<uint64_t> recorded{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      // Records until Close has certainly taken effect: then it must be a no-op.
      for (int k = 0; k < 200000; ++k) {
        timeline->Instant("t", "tick", Clock::now());
        recorded.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  while (recorded.load() < 1000) std::this_thread::yield();
  ASSERT_TRUE(timeline->Close().ok());
  const uint64_t written = timeline->events_written();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(timeline->events_written(), written);
  EXPECT_GT(written, 0u);
  EXPECT_EQ(CountRecorded(ParseTrace(ReadFile(path.str()))), written);
}

// A rank that dies before Close leaves "[", whole events and no "]": what the
// viewers load. Checked on the live file once the writer has caught up.
TEST(Timeline, FileBeforeCloseIsAnUnterminatedArrayOfWholeEvents) {
  TempPath path("unclosed");
  auto timeline = OpenOrDie(path.str(), 0);
  ASSERT_NE(timeline, nullptr);
  for (int i = 0; i < 100; ++i) timeline->Instant("t", "tick", Clock::now());
  Deadline deadline = Deadline::AfterSeconds(30);
  while (timeline->events_written() < 100 && !deadline.Expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(timeline->events_written(), 100u);
  std::string live = ReadFile(path.str());
  ASSERT_FALSE(live.empty());
  EXPECT_EQ(live.front(), '[');
  EXPECT_EQ(live.back(), '}');
  EXPECT_EQ(CountRecorded(ParseTrace(live + "]")), 100u);
  ASSERT_TRUE(timeline->Close().ok());
}

TEST(Timeline, DropsAndCountsEventsWhenTheWriterFallsBehind) {
  TempPath path("drops");
  TimelineOptions options;
  options.max_pending_events = 8;
  auto timeline = OpenOrDie(path.str(), 0, options);
  ASSERT_NE(timeline, nullptr);
  constexpr uint64_t kEvents = 100000;
  for (uint64_t i = 0; i < kEvents; ++i) timeline->Instant("t", "tick", Clock::now());
  ASSERT_TRUE(timeline->Close().ok());
  const uint64_t dropped = timeline->events_dropped();
  EXPECT_GT(dropped, 0u) << "the writer cannot keep up with an 8-event buffer";
  EXPECT_EQ(timeline->events_written() + dropped, kEvents);

  std::vector<Json> events = ParseTrace(ReadFile(path.str()));
  EXPECT_EQ(CountRecorded(events), timeline->events_written());
  const Json* last_report = nullptr;
  for (const Json& e : events) {
    if (e.Str("name") == "timeline dropped events") last_report = &e;
  }
  ASSERT_NE(last_report, nullptr);
  EXPECT_EQ(last_report->Num("pid"), 0);
  EXPECT_EQ(last_report->Find("args")->Num("dropped"), static_cast<double>(dropped));
}

TEST(Timeline, OpenErrorsNameThePath) {
  const std::string bad = "/nonexistent-cohort-dir/sub/trace.json";
  Result<std::unique_ptr<Timeline>> timeline = Timeline::Open(bad, 0);
  ASSERT_FALSE(timeline.ok());
  EXPECT_EQ(timeline.status().code(), Status::Code::kIoError);
  EXPECT_NE(timeline.status().message().find(bad), std::string::npos)
      << timeline.status().message();

  // /dev/full opens but every write fails: the header write reports it.
  Result<std::unique_ptr<Timeline>> full = Timeline::Open("/dev/full", 0);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), Status::Code::kIoError);
  EXPECT_NE(full.status().message().find("/dev/full"), std::string::npos)
      << full.status().message();

  TempPath path("bad_rank");
  EXPECT_EQ(Timeline::Open(path.str(), -1).status().code(), Status::Code::kInvalidArgument);
}

TEST(Timeline, EmptyTimelineIsValid) {
  TempPath path("empty");
  auto timeline = OpenOrDie(path.str(), 5);
  ASSERT_NE(timeline, nullptr);
  ASSERT_TRUE(timeline->Close().ok());
  std::vector<Json> events = ParseTrace(ReadFile(path.str()));
  EXPECT_EQ(CountRecorded(events), 0u);
  EXPECT_EQ(PidsByName(events).count("cohort rank 5"), 1u);
}

}  // namespace
}  // namespace cohort
