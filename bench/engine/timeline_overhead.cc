// Cost of recording timeline events on the caller's thread, and how fast the
// writer thread drains them. Not part of CI: timings belong in benchmarks,
// not tests. Build against a cohort build directory, e.g. (one line)
//   g++ -std=c++20 -O3 -Iinclude -Isrc bench/engine/timeline_overhead.cc
//       build/libcohort_core.a -lpthread -lcrypto -lrt -o /tmp/timeline_overhead
// and run /tmp/timeline_overhead [/tmp/timeline_bench.json]. Each recording
// thread reports wall time and its own CPU time per event; on a loaded
// machine the CPU time is the figure to trust.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "engine/timeline.h"

namespace cohort {
namespace {

constexpr int kRepeats = 7;
// Below the default 2^18-event buffer in total, so the writer never has to
// drop and the drop path (cheaper) does not flatter the numbers.
constexpr int kEventsInTotal = 200000;

double ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

struct Cost {
  double wall_ns;
  double cpu_ns;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Nanoseconds per recorded event (the slowest thread's), with `threads`
// threads recording Spans with a realistic tensor name, phase and args.
Cost RecordCost(const std::string& path, int threads) {
  auto timeline = std::move(Timeline::Open(path, 0).value());
  const int per_thread = kEventsInTotal / threads;
  std::vector<std::thread> workers;
  std::vector<Cost> costs(threads);
  std::atomic<int> warmed{0};
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const std::string tensor = "grad.layer3.conv" + std::to_string(t) + ".weight";
      Clock::time_point now = Clock::now();
      // Steady state: one untimed round grows the buffers to size (they keep
      // their capacity from then on), then the writer catches up.
      for (int i = 0; i < per_thread; ++i) {
        timeline->Span(tensor, "ALLREDUCE", now, now, R"({"bytes":1048576})");
      }
      warmed.fetch_add(1);
      while (warmed.load() < threads || timeline->events_written() < uint64_t(kEventsInTotal)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      double cpu_start = ThreadCpuNs();
      Clock::time_point start = Clock::now();
      for (int i = 0; i < per_thread; ++i) {
        timeline->Span(tensor, "ALLREDUCE", now, now, R"({"bytes":1048576})");
      }
      costs[t].wall_ns =
          std::chrono::duration<double, std::nano>(Clock::now() - start).count() / per_thread;
      costs[t].cpu_ns = (ThreadCpuNs() - cpu_start) / per_thread;
    });
  }
  for (std::thread& w : workers) w.join();
  Status status = timeline->Close();
  if (!status.ok() || timeline->events_dropped() != 0) {
    std::fprintf(stderr, "close: %s, dropped %llu\n", status.ToString().c_str(),
                 static_cast<unsigned long long>(timeline->events_dropped()));
  }
  Cost worst{0, 0};
  for (const Cost& c : costs) {
    worst.wall_ns = std::max(worst.wall_ns, c.wall_ns);
    worst.cpu_ns = std::max(worst.cpu_ns, c.cpu_ns);
  }
  return worst;
}

// Events per second the writer formats and writes: everything is queued
// first (long flush interval), then Close() drains it.
double WriterEventsPerSecond(const std::string& path) {
  TimelineOptions options;
  options.max_pending_events = size_t{1} << 20;
  options.max_pending_bytes = size_t{256} << 20;
  options.flush_interval = std::chrono::seconds(60);
  auto timeline = std::move(Timeline::Open(path, 0, options).value());
  constexpr int kEvents = 400000;
  Clock::time_point now = Clock::now();
  for (int i = 0; i < kEvents; ++i) {
    timeline->Span("grad.layer3.conv2.weight", "ALLREDUCE", now, now, R"({"bytes":1048576})");
  }
  Clock::time_point start = Clock::now();
  (void)timeline->Close();
  return kEvents / SecondsSince(start);
}

double ClockNowNs() {
  constexpr int kCalls = 1000000;
  Clock::time_point start = Clock::now();
  int64_t sink = 0;
  for (int i = 0; i < kCalls; ++i) sink += Clock::now().time_since_epoch().count();
  double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count() / kCalls;
  return sink == 0 ? 0 : ns;
}

}  // namespace
}  // namespace cohort

int main(int argc, char** argv) {
  using namespace cohort;
  const std::string path = argc > 1 ? argv[1] : "/tmp/cohort_timeline_bench.json";
  std::printf("Clock::now(): %.1f ns per call (not included below)\n", ClockNowNs());
  for (int threads : {1, 2, 4, 8}) {
    std::vector<double> wall, cpu;
    for (int r = 0; r < kRepeats; ++r) {
      Cost c = RecordCost(path, threads);
      wall.push_back(c.wall_ns);
      cpu.push_back(c.cpu_ns);
    }
    std::printf("Span() with %d recording thread(s): median %.1f ns wall, %.1f ns CPU per event\n",
                threads, Median(wall), Median(cpu));
  }
  std::vector<double> rates;
  for (int r = 0; r < 3; ++r) rates.push_back(WriterEventsPerSecond(path));
  std::printf("writer drains %.2f M events/s\n", Median(rates) / 1e6);
  std::remove(path.c_str());
  return 0;
}
