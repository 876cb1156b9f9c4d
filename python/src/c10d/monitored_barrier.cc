// ProcessGroupCohort's monitored_barrier, through the c10d store: every rank
// checks in under a key; rank 0 names the ranks that did not arrive in time
// (the engine's barrier cannot tell who is missing) and answers them.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <thread>

#include "c10d/process_group.h"
#include "cohort/c_api.h"

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
  for (int r : ranks) {
    if (!out.empty()) out += ", ";
    out += std::to_string(r);
  }
  return out;
}

}  // namespace

// torch 1.13's contract (ProcessGroupGloo::monitoredBarrier), word for word
// where torch has words: rank 0 waits for each rank in turn within the
// barrier's timeout and names the first one missing ("[Rank 0]: Rank 2 failed
// to pass monitoredBarrier in 1000 ms"), or with wait_all_ranks every one
// ("[Rank 0]: Ranks 1, 2 failed ..."); when the time ran out before it could
// wait for a rank (timeout 0), the original exception is rank 0's own "Rank 0
// timed out in monitoredBarrier after 0 ms.". Every other rank reports its
// own failure ("Rank 1 successfully reached monitoredBarrier, but received
// errors while waiting for send/recv from rank 0. ...") after the group's
// timeout, or at once when rank 0 gave up (its verdict, through the store, is
// the original exception): never rank 0's verdict as its own.
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
    std::string original;
    try {
      store_->wait({done}, timeout_);
      const std::vector<uint8_t> verdict = store_->get(done);
      if (verdict.empty()) return;
      original = "rank 0 gave up: " + std::string(verdict.begin(), verdict.end());
    } catch (const std::exception&) {
      original = "Timed out waiting " + std::to_string(timeout_.count()) +
                 "ms for rank 0 to answer (cohort: no answer from rank 0, host " + PeerHostOf(0) +
                 ")";
    }
    TORCH_CHECK(false, "Rank ", rank_,
                " successfully reached monitoredBarrier, but received errors while waiting for "
                "send/recv from rank 0. Please check rank 0 logs for faulty rank.\n Original "
                "exception: \n",
                original);
  }
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  auto arrived = [&](int r) { return store_->check({base + std::to_string(r)}); };
  auto give_up = [&](const std::string& message) {
    store_->set(done, std::vector<uint8_t>(message.begin(), message.end()));
    TORCH_CHECK(false, message);
  };
  const std::string within =
      " failed to pass monitoredBarrier in " + std::to_string(timeout.count()) + " ms";
  if (wait_all_ranks) {
    std::vector<int> missing;
    for (int round = 0;; Backoff(&round)) {
      missing.clear();
      for (int r = 1; r < size_; ++r) {
        if (!arrived(r)) missing.push_back(r);
      }
      if (missing.empty() || Clock::now() >= deadline) break;
    }
    if (!missing.empty()) give_up("[Rank 0]: Ranks " + JoinRanks(missing) + within);
  } else {
    std::vector<int> processed;
    for (int r = 1; r < size_; ++r) {
      const std::string failed = "[Rank 0]: Rank " + std::to_string(r) + within;
      if (Clock::now() >= deadline) {  // no time left to wait for rank r (as gloo)
        give_up(failed + "\n Original exception: \nRank 0 timed out in monitoredBarrier after " +
                std::to_string(timeout.count()) + " ms.\n" +
                (processed.empty() ? "No ranks successfully processed in monitoredBarrier."
                                   : "Successfully processed ranks: " + JoinRanks(processed)));
      }
      for (int round = 0; !arrived(r); Backoff(&round)) {
        if (Clock::now() >= deadline) {
          give_up(failed + "\n Original exception: \ncohort: rank " + std::to_string(r) +
                  " (host " + PeerHostOf(r) + ") did not reach the barrier within " +
                  std::to_string(timeout.count()) + " ms");
        }
      }
      processed.push_back(r);
    }
  }
  store_->set(done, std::vector<uint8_t>{});
}

std::string ProcessGroupCohort::PeerHostOf(int group_rank) const {
  char host[256];
  cohort_error err;
  if (cohort_peer_host(global_ranks_[group_rank], host, sizeof(host), &err) != COHORT_OK) {
    return "unknown";
  }
  return host;
}

}  // namespace cohort_c10d
