// Trace CSV parsing and the synthetic generator (see trace.h).
#include "sched/trace.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

namespace cohort::sched {

namespace {

std::vector<std::string> SplitFields(std::string_view line) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    std::string field(
        line.substr(start, comma == std::string_view::npos ? line.npos : comma - start));
    // Trim spaces around a field.
    field.erase(0, field.find_first_not_of(" \t"));
    field.erase(field.find_last_not_of(" \t\r") + 1);
    fields.push_back(field);
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

Result<double> ParseNumber(const std::string& text, const std::string& where, const char* field) {
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(value) || value < 0) {
    return Status::InvalidArgument(where + ": " + field + " '" + text +
                                   "' is not a non-negative number");
  }
  return value;
}

Result<TraceJob> ParseLine(std::string_view line, const std::string& where) {
  std::vector<std::string> f = SplitFields(line);
  if (f.size() != 6 && f.size() != 7) {
    return Status::InvalidArgument(
        where +
        ": expected 6 or 7 fields "
        "(submit,user,project,slots,duration,priority[,max_time]), got " +
        std::to_string(f.size()));
  }
  TraceJob job;
  Result<double> submit = ParseNumber(f[0], where, "submit");
  if (!submit.ok()) return submit.status();
  job.submit = *submit;
  if (f[1].empty()) return Status::InvalidArgument(where + ": user is empty");
  job.user = f[1];
  job.project = f[2].empty() ? f[1] : f[2];
  Result<double> slots = ParseNumber(f[3], where, "slots");
  if (!slots.ok()) return slots.status();
  if (*slots < 1 || *slots != std::floor(*slots) || *slots > 1e6) {
    return Status::InvalidArgument(where + ": slots '" + f[3] + "' is not a positive integer");
  }
  job.slots = static_cast<int>(*slots);
  Result<double> duration = ParseNumber(f[4], where, "duration");
  if (!duration.ok()) return duration.status();
  job.duration = *duration;
  Result<PriorityClass> priority = ParsePriority(f[5]);
  if (!priority.ok()) return priority.status().WithContext(where);
  job.priority = *priority;
  if (f.size() == 7 && !f[6].empty()) {
    Result<double> max_time = ParseNumber(f[6], where, "max_time");
    if (!max_time.ok()) return max_time.status();
    if (*max_time < job.duration) {
      return Status::InvalidArgument(where + ": max_time " + f[6] + " is shorter than duration " +
                                     f[4]);
    }
    job.max_time = *max_time;
  }
  return job;
}

}  // namespace

Result<std::vector<TraceJob>> ParseTrace(std::string_view text, const std::string& source) {
  std::vector<TraceJob> jobs;
  size_t start = 0;
  for (int number = 1; start < text.size(); ++number) {
    size_t newline = text.find('\n', start);
    std::string_view line =
        text.substr(start, newline == std::string_view::npos ? text.npos : newline - start);
    start = newline == std::string_view::npos ? text.size() : newline + 1;
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || line[first] == '#') continue;
    if (number == 1 && line.substr(first, 6) == "submit") continue;
    Result<TraceJob> job = ParseLine(line, source + ":" + std::to_string(number));
    if (!job.ok()) return job.status();
    jobs.push_back(std::move(*job));
  }
  if (jobs.empty()) return Status::InvalidArgument(source + ": the trace has no jobs");
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  return jobs;
}

Result<std::vector<TraceJob>> ReadTraceFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError("cannot open trace '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return ParseTrace(text.str(), path);
}

std::vector<TraceJob> SyntheticTrace(const SyntheticSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  std::uniform_real_distribution<double> unit(0, 1);
  // Gang sizes 1, 2, 4, ..., 64 with Philly/Helios-like weights.
  const double size_weights[] = {0.55, 0.10, 0.10, 0.15, 0.05, 0.03, 0.02};
  const int largest = std::min(spec.max_slots, spec.hosts * spec.slots_per_host);
  std::vector<int> sizes;
  std::vector<double> weights;
  for (int k = 0, size = 1; k < 7 && size <= largest; ++k, size *= 2) {
    sizes.push_back(size);
    weights.push_back(size_weights[k]);
  }
  std::discrete_distribution<int> pick_size(weights.begin(), weights.end());
  std::lognormal_distribution<double> duration(std::log(900.0), 1.6);
  std::uniform_int_distribution<int> pick_user(0, spec.users - 1);
  std::vector<TraceJob> jobs(spec.jobs);
  double work = 0;
  for (TraceJob& job : jobs) {
    int user = pick_user(rng);
    // snprintf rather than "u" + std::to_string(): g++ 12 warns (-Wrestrict) on that here.
    char name[24];
    std::snprintf(name, sizeof(name), "u%d", user);
    job.user = name;
    std::snprintf(name, sizeof(name), "p%d", user / 2);
    job.project = name;
    job.slots = sizes[pick_size(rng)];
    job.duration = std::clamp(std::round(duration(rng)), 10.0, 3 * 86400.0);
    job.max_time = std::ceil(job.duration * (1 + unit(rng)));
    double p = unit(rng);
    job.priority = p < 0.10   ? PriorityClass::kHigh
                   : p < 0.85 ? PriorityClass::kNormal
                              : PriorityClass::kLow;
    work += job.slots * job.duration;
  }
  // Poisson arrivals over the span that offers `load` times the capacity.
  const double capacity = static_cast<double>(spec.hosts) * spec.slots_per_host;
  const double span = work / (capacity * spec.load);
  std::exponential_distribution<double> gap(spec.jobs / span);
  double t = 0;
  for (TraceJob& job : jobs) {
    job.submit = std::round(t);
    t += gap(rng);
  }
  return jobs;
}

std::string FormatTrace(const std::vector<TraceJob>& jobs) {
  std::string text = "submit,user,project,slots,duration,priority,max_time\n";
  char line[256];
  for (const TraceJob& job : jobs) {
    std::snprintf(line, sizeof(line), "%.17g,%s,%s,%d,%.17g,%s,%.17g\n", job.submit,
                  job.user.c_str(), job.project.c_str(), job.slots, job.duration,
                  PriorityName(job.priority), job.max_time);
    text += line;
  }
  return text;
}

}  // namespace cohort::sched
