// Answering "why has my tensor not run?" after a wait timed out.
#include "engine/wait_report.h"

#include <sstream>

namespace cohort {

std::optional<WaitSnapshot> WaitReport::Ask(std::chrono::milliseconds patience) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t before = answers_;
  asks_.fetch_add(1, std::memory_order_acq_rel);
  const bool got = answered_.wait_for(lock, patience, [&] { return answers_ != before; });
  asks_.fetch_sub(1, std::memory_order_acq_rel);
  if (!got) return std::nullopt;
  return latest_;
}

void WaitReport::Answer(WaitSnapshot snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  latest_ = std::move(snapshot);
  ++answers_;
  answered_.notify_all();
}

std::string DescribeTimedOutWait(const std::string& what, int set_id, const std::string& name,
                                 double timeout_seconds, const std::string& setting,
                                 const std::optional<WaitSnapshot>& snapshot) {
  std::ostringstream out;
  out << what << (set_id == 0 ? "" : " of process set " + std::to_string(set_id))
      << " did not complete within " << timeout_seconds << " s"
      << (setting.empty() ? "" : " (" + setting + ")") << ": ";
  if (!snapshot) {
    out << "the engine is inside a collective that waits for a peer (it fails on its own, "
           "naming the peer)";
    return out.str();
  }
  auto missing = snapshot->missing.find({set_id, name});
  if (missing == snapshot->missing.end()) {
    out << "every rank submitted it; it is queued behind other work";
    return out.str();
  }
  out << "not submitted by " << missing->second;
  auto others = snapshot->not_submitted_here.find(set_id);
  if (others != snapshot->not_submitted_here.end() && !others->second.empty()) {
    // Names that differ across ranks show up as two half-submitted sets.
    constexpr size_t kShown = 5;
    out << "; other ranks submitted names this rank did not: ";
    for (size_t i = 0; i < others->second.size() && i < kShown; ++i) {
      out << (i ? ", '" : "'") << others->second[i] << "'";
    }
    if (others->second.size() > kShown) out << " and " << others->second.size() - kShown << " more";
  }
  return out.str();
}

}  // namespace cohort
