// The discrete-event simulator (see simulator.h). Events are submissions,
// completions and preempted jobs' exits; after each instant's events the
// policy runs one pass and its starts and preemptions become new events.
#include "sched/simulator.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <set>
#include <unordered_map>

namespace cohort::sched {

namespace {

enum class EventKind { kSubmit, kFinish, kExit };

struct Event {
  double at;
  uint64_t seq;  // ties keep insertion order
  EventKind kind;
  size_t job;
  int generation;  // a finish/exit of an earlier run of a requeued job is stale
  bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

struct SimJob {
  double remaining = 0;
  double first_start = -1;
  double finish = -1;
  double run_started = 0;
  int generation = 0;
};

class Simulation {
 public:
  Simulation(const std::vector<TraceJob>& trace, const SimulationConfig& config)
      : trace_(trace), config_(config), jobs_(trace.size()) {
    for (int h = 0; h < config.hosts; ++h) {
      state_.hosts.push_back({"host" + std::to_string(h), config.slots_per_host});
    }
    state_.quota = config.quota;
    std::set<std::string> users;
    for (size_t i = 0; i < trace.size(); ++i) {
      jobs_[i].remaining = trace[i].duration;
      Push(trace[i].submit, EventKind::kSubmit, i);
      users.insert(trace[i].user);
      largest_ = std::max(largest_, trace[i].slots);
    }
    users_.assign(users.begin(), users.end());
    received_all_.assign(users_.size(), 0);
    received_contended_.assign(users_.size(), 0);
  }

  Result<SimulationResult> Run() {
    const int pool = config_.hosts * config_.slots_per_host;
    for (size_t i = 0; i < trace_.size(); ++i) {
      if (trace_[i].slots > pool) {
        return Status::InvalidArgument("trace job " + std::to_string(i + 1) + " asks for " +
                                       std::to_string(trace_[i].slots) +
                                       " slots; the simulated pool has " + std::to_string(pool));
      }
    }
    double last = trace_.empty() ? 0 : trace_.front().submit;
    while (!events_.empty()) {
      const double now = events_.top().at;
      Account(last, now);
      last = now;
      while (!events_.empty() && events_.top().at == now) {
        Event event = events_.top();
        events_.pop();
        Handle(event, now);
      }
      state_.now = now;
      Apply(Schedule(state_, config_.policy), now);
      ++result_.passes;
    }
    return Summarize();
  }

 private:
  void Push(double at, EventKind kind, size_t job, int generation = 0) {
    events_.push({at, seq_++, kind, job, generation});
  }

  // Integrates busy slots and per-user service over [from, to).
  void Account(double from, double to) {
    const double dt = to - from;
    if (dt <= 0) return;
    AdvanceUsage(state_.running, dt, config_.usage_half_life_s, &state_.usage);
    int busy = 0;
    std::vector<double> slots(users_.size(), 0);
    for (const RunningJob& r : state_.running) {
      busy += r.spec.slots;
      slots[UserIndex(r.spec.user)] += r.spec.slots;
    }
    if (!state_.pending.empty()) {
      busy_saturated_ += busy * dt;
      saturated_ += dt;
    }
    bool contended = true;
    for (size_t u = 0; u < users_.size(); ++u) contended = contended && waiting_[users_[u]] > 0;
    for (size_t u = 0; u < users_.size(); ++u) {
      received_all_[u] += slots[u] * dt;
      if (contended) received_contended_[u] += slots[u] * dt;
    }
    any_contended_ = any_contended_ || contended;
  }

  size_t UserIndex(const std::string& user) const {
    return std::lower_bound(users_.begin(), users_.end(), user) - users_.begin();
  }

  void Enqueue(size_t i) {
    const TraceJob& t = trace_[i];
    JobSpec spec;
    spec.id = i + 1;
    spec.user = t.user;
    spec.project = t.project;
    spec.slots = t.slots;
    spec.priority = t.priority;
    spec.submitted = t.submit;
    // A requeued job asks for what its limit has left.
    double done = t.duration - jobs_[i].remaining;
    spec.max_time = t.max_time > 0 ? std::max(1.0, t.max_time - done) : 0;
    state_.pending.push_back(spec);
    ++waiting_[t.user];
  }

  void Handle(const Event& event, double now) {
    SimJob& job = jobs_[event.job];
    if (event.kind == EventKind::kSubmit) return Enqueue(event.job);
    if (event.generation != job.generation) return;  // stale: the job was requeued
    auto it = std::find_if(state_.running.begin(), state_.running.end(),
                           [&](const RunningJob& r) { return r.spec.id == event.job + 1; });
    if (it == state_.running.end()) return;
    state_.running.erase(it);
    ++job.generation;
    if (event.kind == EventKind::kFinish) {
      job.finish = now;
      return;
    }
    // Exit after SIGTERM: the checkpoint kept the work done until SIGTERM.
    job.remaining = std::max(0.0, job.remaining - (terminated_at_[event.job] - job.run_started));
    Enqueue(event.job);
  }

  void Apply(const Decision& decision, double now) {
    std::set<uint64_t> started;
    for (const StartDecision& start : decision.starts) {
      size_t i = start.job - 1;
      auto spec = std::find_if(state_.pending.begin(), state_.pending.end(),
                               [&](const JobSpec& s) { return s.id == start.job; });
      RunningJob running;
      running.spec = *spec;
      running.started = now;
      running.placement = start.placement;
      running.borrowed = start.borrowed;
      state_.running.push_back(std::move(running));
      started.insert(start.job);
      --waiting_[trace_[i].user];
      SimJob& job = jobs_[i];
      if (job.first_start < 0) job.first_start = now;
      job.run_started = now;
      Push(now + job.remaining, EventKind::kFinish, i, job.generation);
    }
    if (!started.empty()) {
      std::erase_if(state_.pending, [&](const JobSpec& s) { return started.count(s.id) > 0; });
    }
    for (const PreemptDecision& preempt : decision.preemptions) {
      size_t i = preempt.job - 1;
      for (RunningJob& r : state_.running) {
        if (r.spec.id != preempt.job) continue;
        r.terminating = true;
        r.terminating_since = now;
      }
      terminated_at_[i] = now;
      ++result_.preemptions;
      Push(now + std::min(config_.checkpoint_s, preempt.grace_s), EventKind::kExit, i,
           jobs_[i].generation);
    }
  }

  SimulationResult Summarize() {
    result_.policy = PolicyName(config_.policy.kind);
    const double capacity = static_cast<double>(config_.hosts) * config_.slots_per_host;
    result_.utilization = saturated_ > 0 ? busy_saturated_ / (capacity * saturated_) : 0;
    std::vector<double> jct, largest_waits;
    double first_submit = trace_.empty() ? 0 : trace_.front().submit, last_finish = 0;
    const int bounds[][2] = {{1, 1}, {2, 4}, {5, 8}, {9, 16}, {17, 32}, {33, 64}, {65, 1 << 30}};
    std::vector<std::vector<double>> bucket_waits(7);
    for (size_t i = 0; i < trace_.size(); ++i) {
      const SimJob& job = jobs_[i];
      jct.push_back(job.finish - trace_[i].submit);
      last_finish = std::max(last_finish, job.finish);
      double wait = job.first_start - trace_[i].submit;
      if (2 * trace_[i].slots >= largest_) largest_waits.push_back(wait);
      for (int b = 0; b < 7; ++b) {
        if (trace_[i].slots >= bounds[b][0] && trace_[i].slots <= bounds[b][1]) {
          bucket_waits[b].push_back(wait);
        }
      }
    }
    double sum = 0;
    for (double v : jct) sum += v;
    result_.mean_jct = jct.empty() ? 0 : sum / jct.size();
    result_.p99_jct = Percentile(jct, 0.99);
    result_.p99_wait_largest = Percentile(largest_waits, 0.99);
    result_.makespan = last_finish - first_submit;
    for (int b = 0; b < 7; ++b) {
      if (bucket_waits[b].empty()) continue;
      WaitBucket bucket{bounds[b][0], bounds[b][1], static_cast<int>(bucket_waits[b].size()), 0,
                        Percentile(bucket_waits[b], 0.99)};
      for (double w : bucket_waits[b]) bucket.mean_wait += w / bucket_waits[b].size();
      result_.waits.push_back(bucket);
    }
    for (int c = 2; c >= 0; --c) {
      std::vector<double> waits, largest;
      for (size_t i = 0; i < trace_.size(); ++i) {
        if (static_cast<int>(trace_[i].priority) != c) continue;
        waits.push_back(jobs_[i].first_start - trace_[i].submit);
        if (2 * trace_[i].slots >= largest_) largest.push_back(waits.back());
      }
      if (waits.empty()) continue;
      PriorityWait w{static_cast<PriorityClass>(c), static_cast<int>(waits.size()), 0,
                     Percentile(waits, 0.99), Percentile(largest, 0.99)};
      for (double v : waits) w.mean_wait += v / waits.size();
      result_.priority_waits.push_back(w);
    }
    std::vector<double> shares;
    const std::vector<double>& received = any_contended_ ? received_contended_ : received_all_;
    for (size_t u = 0; u < users_.size(); ++u) {
      auto share = state_.shares.user.find(users_[u]);
      shares.push_back(received[u] / (share == state_.shares.user.end() ? 1.0 : share->second));
    }
    result_.jain = JainIndex(shares);
    return result_;
  }

  const std::vector<TraceJob>& trace_;
  const SimulationConfig& config_;
  std::vector<SimJob> jobs_;
  QueueState state_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t seq_ = 0;
  int largest_ = 0;
  std::vector<std::string> users_;  // sorted
  std::map<std::string, int> waiting_;
  std::unordered_map<size_t, double> terminated_at_;
  std::vector<double> received_all_, received_contended_;
  bool any_contended_ = false;
  double busy_saturated_ = 0, saturated_ = 0;
  SimulationResult result_;
};

}  // namespace

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(std::ceil(p * values.size()));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

Result<SimulationResult> Simulate(const std::vector<TraceJob>& trace,
                                  const SimulationConfig& config) {
  if (config.hosts <= 0 || config.slots_per_host <= 0) {
    return Status::InvalidArgument("the simulated pool needs at least 1 host and 1 slot per host");
  }
  return Simulation(trace, config).Run();
}

}  // namespace cohort::sched
