// Job traces for the simulator: the CSV format (docs/scheduling.md) and a
// synthetic generator shaped like published GPU-cluster traces.
#ifndef COHORT_SCHED_TRACE_H_
#define COHORT_SCHED_TRACE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "sched/job.h"

namespace cohort::sched {

struct TraceJob {
  double submit = 0;  // seconds from the start of the trace
  std::string user;
  std::string project;
  int slots = 1;
  double duration = 0;  // seconds the job runs when never preempted
  PriorityClass priority = PriorityClass::kNormal;
  double max_time = 0;  // the limit the user gave (>= duration); 0: none
};

// Parses "submit,user,project,slots,duration,priority[,max_time]" lines.
// Blank lines, lines starting with '#' and a first line starting with
// "submit" (a header) are skipped. Errors name `source`, the line and field.
Result<std::vector<TraceJob>> ParseTrace(std::string_view text, const std::string& source);
Result<std::vector<TraceJob>> ReadTraceFile(const std::string& path);

struct SyntheticSpec {
  int hosts = 16;
  int slots_per_host = 8;
  int jobs = 1000;
  int users = 4;
  uint64_t seed = 1;
  // Offered work / capacity over the submission span: > 1 saturates.
  double load = 1.5;
  int max_slots = 64;  // the largest gang (also capped at the pool's size)
};

// Philly/Helios-shaped jobs: most ask for 1 slot, few for large gangs (sizes
// are powers of two up to max_slots); durations are log-normal (median 15 min,
// heavy tail, capped at 3 days); max_time overestimates the duration by
// 0-100%; users are equally likely, user k belongs to project k/2;
// priorities are 10% high, 75% normal, 15% low; arrivals are Poisson.
std::vector<TraceJob> SyntheticTrace(const SyntheticSpec& spec);

// The trace as CSV text that ParseTrace reads back.
std::string FormatTrace(const std::vector<TraceJob>& jobs);

}  // namespace cohort::sched

#endif  // COHORT_SCHED_TRACE_H_
