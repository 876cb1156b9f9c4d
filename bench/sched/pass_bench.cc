// One scheduling pass over a large queue: 256 hosts x 8 slots nearly full of
// running jobs, 10,000 pending jobs of 8 users (synthetic, Philly/Helios-
// shaped), quotas on. Prints the median and p90 of --repeats passes, with and
// without estimated starts. Usage: sched_pass_bench [--pending N] [--repeats R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>

#include "sched/gang_placement.h"
#include "sched/policy.h"
#include "sched/simulator.h"
#include "sched/trace.h"

namespace {

using namespace cohort::sched;

// "h12": snprintf, as "h" + std::to_string() makes g++ 12 warn (-Wrestrict).
std::string Name(const char* prefix, int k) {
  char name[24];
  std::snprintf(name, sizeof(name), "%s%d", prefix, k);
  return name;
}

QueueState MakeState(int pending) {
  QueueState state;
  state.now = 1e6;
  for (int h = 0; h < 256; ++h) state.hosts.push_back({Name("h", h), 8});
  SyntheticSpec spec;
  spec.hosts = 256;
  spec.slots_per_host = 8;
  spec.jobs = pending + 4000;
  spec.users = 8;
  spec.seed = 3;
  std::vector<TraceJob> trace = SyntheticTrace(spec);
  std::vector<int> free(256, 8);
  std::mt19937_64 rng(5);
  uint64_t id = 1;
  size_t next = 0;
  // Running: fill until fewer than 16 slots are free (the queue is saturated).
  for (; next < trace.size(); ++next) {
    const TraceJob& t = trace[next];
    auto placement = PlaceGang(free, t.slots);
    if (!placement) continue;
    ApplyPlacement(*placement, -1, &free);
    RunningJob r;
    r.spec = {id++, t.user, t.project, t.slots, t.priority, 0, t.max_time};
    r.started = state.now - std::uniform_real_distribution<double>(0, t.duration)(rng);
    r.placement = *placement;
    state.running.push_back(r);
    int total = 0;
    for (int f : free) total += f;
    if (total < 16) break;
  }
  for (++next; next < trace.size() && static_cast<int>(state.pending.size()) < pending; ++next) {
    const TraceJob& t = trace[next];
    state.pending.push_back({id++, t.user, t.project, t.slots, t.priority, t.submit, t.max_time});
  }
  for (int p = 0; p < 4; ++p) state.quota[Name("p", p)] = 512;
  for (int u = 0; u < 8; ++u) state.usage.user[Name("u", u)] = 1000.0 * u;
  return state;
}

// This thread's CPU time: on a shared machine, wall time also counts the
// time other processes held the core.
double ThreadCpuMs() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

void Measure(const QueueState& state, int depth, int repeats) {
  PolicyConfig config;
  config.estimate_depth = depth;
  std::vector<double> ms, cpu_ms;
  size_t starts = 0, waiting = 0;
  for (int i = 0; i < repeats; ++i) {
    double c0 = ThreadCpuMs();
    auto t0 = std::chrono::steady_clock::now();
    Decision d = Schedule(state, config);
    auto t1 = std::chrono::steady_clock::now();
    cpu_ms.push_back(ThreadCpuMs() - c0);
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    starts = d.starts.size();
    waiting = d.pending.size();
  }
  std::printf(
      "pending %zu  running %zu  estimate_depth %3d  starts %zu  waiting %zu  "
      "pass median %.2f ms (cpu %.2f ms)  p90 %.2f ms (cpu %.2f ms)\n",
      state.pending.size(), state.running.size(), depth, starts, waiting, Percentile(ms, 0.5),
      Percentile(cpu_ms, 0.5), Percentile(ms, 0.9), Percentile(cpu_ms, 0.9));
}

}  // namespace

int main(int argc, char** argv) {
  int pending = 10000, repeats = 21;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--pending") == 0) pending = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::atoi(argv[i + 1]);
  }
  QueueState state = MakeState(pending);
  Measure(state, 0, repeats);
  Measure(state, 100, repeats);
  return 0;
}
