// `cohort sched simulate`: replays a job trace (a CSV file or a synthetic
// one) through the queue's policy and the FIFO and strict-priority
// baselines, and prints what each achieved (sched/simulator.h).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flag_values.h"
#include "cli/usage_error.h"
#include "sched/simulator.h"
#include "sched/trace.h"

namespace cohort::cli {

namespace {

constexpr int kExitFailure = 1;
constexpr char kSynopsis[] = "cohort sched simulate TRACE [options]";

void PrintUsage() {
  std::fprintf(stdout,
               "usage: %s\n"
               "       cohort sched simulate --synthetic [--jobs J] [--users U] [--seed K]\n"
               "                             [--load X] [--max-slots N] [options]\n"
               "\n"
               "Replays jobs through cohort's policy (priority classes, fair share, quotas,\n"
               "backfill with a reservation for the head job, preemption) and through FIFO and\n"
               "strict priority without backfill, on a simulated pool, and prints utilization,\n"
               "mean and p99 job completion time, queue wait by gang size and Jain's fairness\n"
               "index between users for each. TRACE is a CSV file of\n"
               "submit,user,project,slots,duration,priority[,max_time] (docs/scheduling.md).\n"
               "\n"
               "options:\n"
               "  --hosts H            simulated hosts (default 16)\n"
               "  --slots-per-host S   slots per host (default 8)\n"
               "  --policy LIST        comma-separated among %s\n"
               "                       (default: all of them)\n"
               "  --quota P=N,...      guaranteed slots per project (default: no quotas)\n"
               "  --grace S            seconds between SIGTERM and SIGKILL (default 60)\n"
               "  --json               a JSON array, one object per policy\n"
               "  --write-trace FILE   also write the (synthetic) trace as CSV to FILE\n"
               "synthetic trace:\n"
               "  --jobs J (default 1000)  --users U (default 4)  --seed K (default 1)\n"
               "  --load X  offered work / capacity (default 1.5)\n"
               "  --max-slots N  largest gang (default 64)\n"
               "\n"
               "exit status: 0 on success, 1 when the simulation fails, 2 for a usage error.\n",
               kSynopsis, sched::PolicyList().c_str());
}

// Every policy of the registry (sched/policy.h), in its order.
std::vector<sched::PolicyKind> AllPolicies() {
  std::vector<sched::PolicyKind> kinds;
  for (const sched::PolicyEntry& e : sched::kPolicies) kinds.push_back(e.kind);
  return kinds;
}

int UsageError(const std::string& problem) { return cli::UsageError("sched", problem, kSynopsis); }

struct Options {
  std::string trace;
  bool synthetic = false;
  bool json = false;
  std::string write_trace;
  std::vector<sched::PolicyKind> policies = AllPolicies();
  sched::SyntheticSpec spec;
  sched::SimulationConfig config;
};

Status ParsePolicies(const std::string& text, std::vector<sched::PolicyKind>* out) {
  out->clear();
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string name = text.substr(start, comma == std::string::npos ? text.npos : comma - start);
    Result<sched::PolicyKind> kind = sched::ParsePolicyName(name);
    if (!kind.ok()) return kind.status().WithContext("--policy");
    out->push_back(*kind);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return Status::OK();
}

// Applies one "--flag value" pair.
Status ParseFlag(const std::string& flag, const std::string& value, Options* o) {
  auto set_int = [&](int* target, bool allow_zero) -> Status {
    Result<int> v = allow_zero ? ParseNonNegativeInt(flag, value) : ParsePositiveInt(flag, value);
    if (!v.ok()) return v.status();
    *target = *v;
    return Status::OK();
  };
  if (flag == "--hosts") return set_int(&o->config.hosts, false);
  if (flag == "--slots-per-host") return set_int(&o->config.slots_per_host, false);
  if (flag == "--jobs") return set_int(&o->spec.jobs, false);
  if (flag == "--users") return set_int(&o->spec.users, false);
  if (flag == "--max-slots") return set_int(&o->spec.max_slots, false);
  if (flag == "--seed") {
    int seed = 0;
    COHORT_RETURN_IF_ERROR(set_int(&seed, true));
    o->spec.seed = static_cast<uint64_t>(seed);
    return Status::OK();
  }
  if (flag == "--load") {
    Result<double> v = ParsePositiveSeconds(flag, value);
    if (!v.ok()) return v.status();
    o->spec.load = *v;
    return Status::OK();
  }
  if (flag == "--grace") {
    Result<double> v = ParseNonNegativeNumber(flag, value);
    if (!v.ok()) return v.status();
    o->config.policy.grace_s = *v;
    return Status::OK();
  }
  if (flag == "--policy") return ParsePolicies(value, &o->policies);
  if (flag == "--quota") return ParseQuota(value, &o->config.quota);
  if (flag == "--write-trace") {
    o->write_trace = value;
    return Status::OK();
  }
  return Status::InvalidArgument("unknown option '" + flag + "'");
}

void PrintText(const sched::SimulationResult& r) {
  std::printf("policy %s\n", r.policy.c_str());
  std::printf("  utilization       %.1f%% (while jobs waited)\n", 100 * r.utilization);
  std::printf("  mean JCT          %.0f s\n", r.mean_jct);
  std::printf("  p99 JCT           %.0f s\n", r.p99_jct);
  std::printf("  p99 wait largest  %.0f s\n", r.p99_wait_largest);
  std::printf("  Jain (users)      %.3f\n", r.jain);
  std::printf("  makespan          %.0f s, %d preemptions, %d passes\n", r.makespan, r.preemptions,
              r.passes);
  std::printf("  wait by gang size   jobs   mean (s)    p99 (s)\n");
  for (const sched::WaitBucket& b : r.waits) {
    std::string range = b.min_slots == b.max_slots ? std::to_string(b.min_slots)
                        : b.max_slots >= (1 << 30)
                            ? std::to_string(b.min_slots) + "+"
                            : std::to_string(b.min_slots) + "-" + std::to_string(b.max_slots);
    std::printf("    %-16s %6d %10.0f %10.0f\n", range.c_str(), b.jobs, b.mean_wait, b.p99_wait);
  }
  std::printf("  wait by priority    jobs   mean (s)    p99 (s)  p99 largest (s)\n");
  for (const sched::PriorityWait& w : r.priority_waits) {
    std::printf("    %-16s %6d %10.0f %10.0f %16.0f\n", sched::PriorityName(w.priority), w.jobs,
                w.mean_wait, w.p99_wait, w.p99_wait_largest);
  }
}

void PrintJson(const std::vector<sched::SimulationResult>& results) {
  std::printf("[");
  for (size_t i = 0; i < results.size(); ++i) {
    const sched::SimulationResult& r = results[i];
    std::printf(
        "%s\n  {\"policy\": \"%s\", \"utilization\": %.6f, \"mean_jct\": %.3f, "
        "\"p99_jct\": %.3f, \"p99_wait_largest\": %.3f, \"jain\": %.6f, "
        "\"makespan\": %.3f, \"preemptions\": %d, \"wait_by_slots\": [",
        i ? "," : "", r.policy.c_str(), r.utilization, r.mean_jct, r.p99_jct, r.p99_wait_largest,
        r.jain, r.makespan, r.preemptions);
    for (size_t b = 0; b < r.waits.size(); ++b) {
      const sched::WaitBucket& w = r.waits[b];
      std::printf(
          "%s{\"min_slots\": %d, \"max_slots\": %d, \"jobs\": %d, \"mean_wait\": %.3f, "
          "\"p99_wait\": %.3f}",
          b ? ", " : "", w.min_slots, w.max_slots, w.jobs, w.mean_wait, w.p99_wait);
    }
    std::printf("], \"wait_by_priority\": [");
    for (size_t k = 0; k < r.priority_waits.size(); ++k) {
      const sched::PriorityWait& w = r.priority_waits[k];
      std::printf(
          "%s{\"priority\": \"%s\", \"jobs\": %d, \"mean_wait\": %.3f, "
          "\"p99_wait\": %.3f, \"p99_wait_largest\": %.3f}",
          k ? ", " : "", sched::PriorityName(w.priority), w.jobs, w.mean_wait, w.p99_wait,
          w.p99_wait_largest);
    }
    std::printf("]}");
  }
  std::printf("\n]\n");
}

int Simulate(int argc, char** argv) {
  Options o;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      PrintUsage();
      return 0;
    }
    if (arg == "--synthetic") {
      o.synthetic = true;
    } else if (arg == "--json") {
      o.json = true;
    } else if (arg.rfind("--", 0) == 0) {
      if (i + 1 >= argc) return UsageError(arg + " needs a value");
      Status status = ParseFlag(arg, argv[++i], &o);
      if (!status.ok()) return UsageError(status.message());
    } else if (o.trace.empty()) {
      o.trace = arg;
    } else {
      return UsageError("unexpected argument '" + arg + "'");
    }
  }
  if (o.synthetic == !o.trace.empty()) {
    return UsageError("give either a TRACE file or --synthetic");
  }
  std::vector<sched::TraceJob> trace;
  if (o.synthetic) {
    o.spec.hosts = o.config.hosts;
    o.spec.slots_per_host = o.config.slots_per_host;
    trace = sched::SyntheticTrace(o.spec);
  } else {
    Result<std::vector<sched::TraceJob>> read = sched::ReadTraceFile(o.trace);
    if (!read.ok()) {
      std::fprintf(stderr, "cohort sched: %s\n", read.status().message().c_str());
      return kExitFailure;
    }
    trace = std::move(*read);
  }
  if (!o.write_trace.empty()) {
    std::ofstream out(o.write_trace, std::ios::binary);
    out << sched::FormatTrace(trace);
    if (!out) {
      std::fprintf(stderr, "cohort sched: cannot write '%s'\n", o.write_trace.c_str());
      return kExitFailure;
    }
  }
  std::vector<sched::SimulationResult> results;
  for (sched::PolicyKind kind : o.policies) {
    sched::SimulationConfig config = o.config;
    config.policy.kind = kind;
    config.policy.estimate_depth = 0;  // estimates are for people reading the queue
    Result<sched::SimulationResult> result = sched::Simulate(trace, config);
    if (!result.ok()) {
      std::fprintf(stderr, "cohort sched: %s\n", result.status().message().c_str());
      return kExitFailure;
    }
    results.push_back(std::move(*result));
  }
  if (o.json) {
    PrintJson(results);
  } else {
    for (const auto& r : results) PrintText(r);
  }
  return 0;
}

}  // namespace

int SchedCommand(int argc, char** argv) {
  if (argc < 1) return UsageError("missing command (simulate)");
  std::string command = argv[0];
  if (command == "-h" || command == "--help") {
    PrintUsage();
    return 0;
  }
  if (command == "simulate") return Simulate(argc - 1, argv + 1);
  return UsageError("unknown command '" + command + "'");
}

}  // namespace cohort::cli
