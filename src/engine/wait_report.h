// WaitReport: how a thread whose wait on a handle timed out learns, from the
// engine thread, why its tensor has not run: which ranks of its process set
// have not submitted the name, and which names the other ranks submitted
// that this rank has not (the usual sign of names that differ across ranks).
//
// The negotiation tables belong to the engine thread, so the waiting thread
// asks and the engine thread answers at the end of its next cycle. An engine
// thread that does not answer is inside a collective waiting for a peer; that
// collective fails on its own at COHORT_TIMEOUT, naming the peer.
#ifndef COHORT_ENGINE_WAIT_REPORT_H_
#define COHORT_ENGINE_WAIT_REPORT_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cohort {

// The engine's view of every name some ranks are still waiting for.
struct WaitSnapshot {
  // (set id, name) -> the ranks that have not submitted it, described with
  // host and pid ("rank 1 (host a, pid 7)").
  std::map<std::pair<int, std::string>, std::string> missing;
  // set id -> names other ranks of the set submitted and this rank has not.
  std::map<int, std::vector<std::string>> not_submitted_here;
};

class WaitReport {
 public:
  // Any thread: asks for a snapshot and waits for it up to `patience`.
  // nullopt when the engine thread did not answer in time.
  std::optional<WaitSnapshot> Ask(std::chrono::milliseconds patience);

  // Engine thread, once per cycle: whether some thread is asking (cheap).
  bool wanted() const { return asks_.load(std::memory_order_acquire) > 0; }
  // Engine thread: answers every thread asking now.
  void Answer(WaitSnapshot snapshot);

 private:
  std::atomic<int> asks_{0};
  std::mutex mu_;
  std::condition_variable answered_;
  uint64_t answers_ = 0;  // guarded by mu_
  WaitSnapshot latest_;   // guarded by mu_
};

// The message of a wait that timed out: `what` ("allreduce 'grad.w'"), its
// set, the timeout (`setting`: the variable it came from, "" when the caller
// passed it), and what `snapshot` (if any) says about its name.
std::string DescribeTimedOutWait(const std::string& what, int set_id, const std::string& name,
                                 double timeout_seconds, const std::string& setting,
                                 const std::optional<WaitSnapshot>& snapshot);

}  // namespace cohort

#endif  // COHORT_ENGINE_WAIT_REPORT_H_
