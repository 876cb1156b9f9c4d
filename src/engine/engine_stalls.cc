// Stall inspection and timed-out waits: which ranks have not submitted a
// tensor, logged and failed after COHORT_STALL_* and named when a wait times out.
#include "engine/engine.h"

#include <algorithm>
#include <sstream>

#include "common/logging.h"

namespace cohort {

std::string Engine::DescribeRanks(const ProcessSet& set, const std::vector<int>& ranks) const {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + set.comm->mesh().Describe(r);
  return out;
}

void Engine::InspectStalls(ProcessSet& set, CycleMessage* mine) {
  if (set.comm->rank() != 0) return;
  const Clock::time_point now = Clock::now();
  if (now >= set.next_stall_report) {
    set.next_stall_report = now + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options_.stall_check_seconds));
    for (const auto& [name, missing] :
         set.table.WaitingLongerThan(std::chrono::duration<double>(options_.stall_check_seconds))) {
      COHORT_LOG(kWarning) << "stall inspector: tensor '" << name << "'"
                           << (set.id == kGlobalProcessSet
                                   ? ""
                                   : " of process set " + std::to_string(set.id))
                           << " has waited more than " << options_.stall_check_seconds
                           << " s (COHORT_STALL_CHECK_TIME); not yet submitted by "
                           << DescribeRanks(set, missing);
    }
  }
  if (options_.stall_shutdown_seconds <= 0) return;
  for (const auto& [name, missing] : set.table.WaitingLongerThan(
           std::chrono::duration<double>(options_.stall_shutdown_seconds))) {
    mine->stalled.push_back(name);
  }
}

void Engine::FailStalled(ProcessSet& set, const std::string& name) {
  std::vector<int> missing;
  for (const auto& [waiting, ranks] : set.table.Waiting()) {
    if (waiting == name) missing = ranks;
  }
  set.table.Drop(name);
  Request r = TakePending(set.id, name);
  if (r.handle == 0) return;
  std::ostringstream message;
  message << "tensor '" << name << "' stalled: " << DescribeRanks(set, missing)
          << " did not submit it within " << options_.stall_shutdown_seconds
          << " s (COHORT_STALL_SHUTDOWN_TIME)";
  handles_.Complete(r.handle, Status::Timeout(message.str()));
}

WaitSnapshot Engine::SnapshotWaiting() const {
  WaitSnapshot snapshot;
  for (const auto& [id, set] : sets_) {
    if (!set->member()) continue;
    const int me = set->comm->rank();
    for (const auto& [name, missing] : set->table.Waiting()) {
      snapshot.missing[{id, name}] = DescribeRanks(*set, missing);
      if (std::find(missing.begin(), missing.end(), me) != missing.end()) {
        snapshot.not_submitted_here[id].push_back(name);
      }
    }
  }
  return snapshot;
}

Status Engine::ExplainTimeout(int64_t handle, double timeout_seconds, const std::string& setting) {
  std::string what = "handle " + std::to_string(handle), name;
  int set_id = kGlobalProcessSet;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, request] : in_flight_) {
      if (request.handle != handle) continue;
      set_id = key.first;
      name = key.second;
      what = std::string(RequestKindName(request.what.kind)) + " '" + name + "'";
      break;
    }
  }
  if (name.empty()) return Status::Timeout(what + " did not complete in time");
  std::optional<WaitSnapshot> snapshot = wait_report_.Ask(std::chrono::milliseconds(1000));
  if (!snapshot) {
    // The engine thread is inside a collective whose own deadline counts from
    // its last progress and is checked between polls, so it may fire a little
    // after ours; its error names the peer it waits for. Give it that moment.
    Status late = handles_.Wait(handle, Deadline::AfterSeconds(std::min(timeout_seconds, 3.0)));
    Result<bool> done = handles_.Poll(handle);
    if (done.ok() && *done)
      return late.ok() ? late : Status(late.code(), what + ": " + late.message());
  }
  return Status::Timeout(
      DescribeTimedOutWait(what, set_id, name, timeout_seconds, setting, snapshot));
}

}  // namespace cohort
