// Job states, stop reasons and the job's JSON.
#include "queue/job_record.h"

#include <algorithm>
#include <cstdlib>

namespace cohort::queue {
namespace {

constexpr JobState kStates[] = {JobState::kPending,   JobState::kStarting, JobState::kRunning,
                                JobState::kSucceeded, JobState::kFailed,   JobState::kCancelled,
                                JobState::kPreempted};

nlohmann::json TimeOrNull(double t) { return t > 0 ? nlohmann::json(t) : nlohmann::json(); }

}  // namespace

const char* StateName(JobState state) {
  switch (state) {
    case JobState::kPending:
      return "pending";
    case JobState::kStarting:
      return "starting";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
    case JobState::kPreempted:
      return "preempted";
  }
  return "?";
}

Result<JobState> ParseState(std::string_view text) {
  for (JobState state : kStates) {
    if (text == StateName(state)) return state;
  }
  return Status::InvalidArgument(
      "unknown job state '" + std::string(text) +
      "' (pending, starting, running, succeeded, failed, cancelled, preempted)");
}

bool IsFinal(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed ||
         state == JobState::kCancelled;
}

bool IsWaiting(JobState state) {
  return state == JobState::kPending || state == JobState::kPreempted;
}

bool IsRunning(JobState state) {
  return state == JobState::kStarting || state == JobState::kRunning;
}

const char* StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kNone:
      return "";
    case StopReason::kCancel:
      return "cancel";
    case StopReason::kPreempt:
      return "preempt";
    case StopReason::kMaxTime:
      return "max-time";
    case StopReason::kLost:
      return "lost";
  }
  return "";
}

StopReason ParseStopReason(std::string_view text) {
  for (StopReason reason :
       {StopReason::kCancel, StopReason::kPreempt, StopReason::kMaxTime, StopReason::kLost}) {
    if (text == StopReasonName(reason)) return reason;
  }
  return StopReason::kNone;
}

std::string FormatPlacement(const std::vector<std::pair<std::string, int>>& hosts) {
  std::string out;
  for (const auto& [name, slots] : hosts) {
    if (!out.empty()) out += ',';
    out += name + ":" + std::to_string(slots);
  }
  return out;
}

std::vector<std::pair<std::string, int>> ParsePlacement(const std::string& text) {
  std::vector<std::pair<std::string, int>> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, comma - start);
    size_t colon = item.rfind(':');
    if (colon != std::string::npos) {
      out.emplace_back(item.substr(0, colon), std::atoi(item.c_str() + colon + 1));
    }
    start = comma + 1;
  }
  return out;
}

sched::JobSpec ToSpec(const JobRecord& job) {
  sched::JobSpec spec;
  spec.id = job.id;
  spec.user = job.user;
  spec.project = job.project;
  spec.slots = job.slots;
  spec.priority = job.priority;
  spec.submitted = job.submitted;
  spec.max_time = job.max_time;
  return spec;
}

nlohmann::json ToJson(const JobRecord& job, const sched::PendingStatus* pending) {
  nlohmann::json out = {
      {"id", job.id},
      {"state", StateName(job.state)},
      {"slots", job.slots},
      {"priority", sched::PriorityName(job.priority)},
      {"user", job.user},
      {"project", job.project},
      {"pool", job.pool},
      {"command", job.command},
      {"submitted", TimeOrNull(job.submitted)},
      {"started", TimeOrNull(job.started)},
      {"finished", TimeOrNull(job.finished)},
      {"reason", job.reason},
      {"exit_code", job.exit_code >= 0 ? nlohmann::json(job.exit_code) : nlohmann::json()},
      {"restarts", job.restarts},
      {"host", job.host},
      {"placement", job.placement},
      {"borrowed", job.borrowed},
      {"max_time", TimeOrNull(job.max_time)},
      {"position", nullptr},
      {"estimated_start", nullptr},
  };
  if (pending != nullptr && IsWaiting(job.state)) {
    out["position"] = pending->position;
    // A preempted job keeps why it was stopped in front of the policy's reason.
    out["reason"] = job.reason.empty() ? pending->reason : job.reason + "; " + pending->reason;
    out["estimated_start"] = TimeOrNull(pending->estimated_start);
  }
  return out;
}

}  // namespace cohort::queue
