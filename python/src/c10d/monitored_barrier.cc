// ProcessGroupCohort's monitored_barrier, through the c10d store: every rank
// checks in under a key; rank 0 names the ranks that did not arrive in time
// (the engine's barrier cannot tell who is missing).
#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <thread>

#include "c10d/process_group.h"

namespace cohort_c10d {
namespace {

using Clock = std::chrono::steady_clock;

// Polling interval while waiting for keys no blocking store call can wait
// for (with a deadline that must name who is missing).
void Backoff(int* round) {
  std::this_thread::sleep_for(
      std::chrono::microseconds(std::min(100 << std::min(*round, 6), 5000)));
  ++*round;
}

std::string JoinRanks(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

}  // namespace

void ProcessGroupCohort::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  const std::chrono::milliseconds timeout =
      opts.timeout == c10d::kUnsetTimeout ? timeout_ : opts.timeout;
  uint64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = next_monitored_barrier_++;
  }
  const std::string base = "cohort_monitored_barrier/" + std::to_string(seq) + "/";
  const std::string done = base + "done";
  if (rank_ != 0) {
    store_->set(base + std::to_string(rank_), std::vector<uint8_t>{1});
    try {
      store_->wait({done}, timeout);
    } catch (const std::exception&) {
      TORCH_CHECK(false, "cohort monitored_barrier: rank ", rank_,
                  " got no answer from rank 0 within ", timeout.count(), " ms");
    }
    const std::vector<uint8_t> verdict = store_->get(done);
    TORCH_CHECK(verdict.empty(), std::string(verdict.begin(), verdict.end()));
    return;
  }
  const auto deadline = Clock::now() + timeout;
  std::vector<int> missing;
  for (int round = 0;; Backoff(&round)) {
    missing.clear();
    for (int r = 1; r < size_; ++r) {
      if (!store_->check({base + std::to_string(r)})) missing.push_back(r);
    }
    if (missing.empty() || Clock::now() >= deadline) break;
  }
  if (missing.empty()) {
    store_->set(done, std::vector<uint8_t>{});
    return;
  }
  if (!wait_all_ranks) missing.resize(1);
  const std::string message = "cohort monitored_barrier: rank" +
                              std::string(missing.size() > 1 ? "s " : " ") + JoinRanks(missing) +
                              " did not reach the barrier within " +
                              std::to_string(timeout.count()) + " ms";
  store_->set(done, std::vector<uint8_t>(message.begin(), message.end()));
  TORCH_CHECK(false, message);
}

}  // namespace cohort_c10d
