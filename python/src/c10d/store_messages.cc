// The store-routed parts of ProcessGroupCohort: send/recv (a message is one
// store key, named by sender, receiver, tag and a per-pair sequence number,
// deleted by the receiver) and monitored_barrier (every rank checks in under
// a key; rank 0 names the ranks that did not arrive in time). cohort's engine
// has collectives only, and the c10d store reaches every rank of the group.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "c10d/process_group.h"

namespace cohort_c10d {
namespace {

using Clock = std::chrono::steady_clock;

// Polling interval while waiting for a key no blocking store call can wait
// for (any of several, or with a deadline that must name who is missing).
void Backoff(int* round) {
  std::this_thread::sleep_for(
      std::chrono::microseconds(std::min(100 << std::min(*round, 6), 5000)));
  ++*round;
}

std::vector<uint8_t> Bytes(const at::Tensor& t) {
  const uint8_t* p = static_cast<const uint8_t*>(t.data_ptr());
  return std::vector<uint8_t>(p, p + t.nbytes());
}

void CheckOneCpuTensor(const std::vector<at::Tensor>& tensors, const char* what) {
  TORCH_CHECK(tensors.size() == 1, "cohort ", what, ": expected 1 tensor per process, got ",
              tensors.size());
  TORCH_CHECK(tensors[0].device().is_cpu() && tensors[0].layout() == at::kStrided, "cohort ", what,
              ": the tensor must be a dense CPU tensor");
}

void CopyMessage(const std::vector<uint8_t>& bytes, const at::Tensor& target, int src) {
  TORCH_CHECK(bytes.size() == target.nbytes(), "cohort recv: rank ", src, " sent ", bytes.size(),
              " bytes but the receiving tensor holds ", target.nbytes());
  at::Tensor buffer = target.is_contiguous() ? target : at::empty_like(target);
  if (!bytes.empty()) std::memcpy(buffer.data_ptr(), bytes.data(), bytes.size());
  if (!buffer.is_same(target)) target.copy_(buffer);
}

std::string JoinRanks(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

}  // namespace

std::string ProcessGroupCohort::MessageKey(int src, int dst, int tag, uint64_t seq) const {
  return "cohort_p2p/" + std::to_string(src) + "/" + std::to_string(dst) + "/" +
         std::to_string(tag) + "/" + std::to_string(seq);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::send(std::vector<at::Tensor>& tensors, int dst,
                                                        int tag) {
  CheckOneCpuTensor(tensors, "send");
  TORCH_CHECK(dst >= 0 && dst < size_ && dst != rank_, "cohort send: bad destination rank ", dst,
              " (group of ", size_, ", this rank ", rank_, ")");
  uint64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = sent_[{dst, tag}]++;
  }
  store_->set(MessageKey(rank_, dst, tag, seq), Bytes(tensors[0].contiguous()));
  auto work = c10::make_intrusive<CohortWork>(
      rank_, c10d::OpType::SEND, tensors, std::vector<int64_t>{}, nullptr, "send", 0.0, nullptr);
  work->Drive(nullptr);  // the store holds the message: sent
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::recv(std::vector<at::Tensor>& tensors, int src,
                                                        int tag) {
  CheckOneCpuTensor(tensors, "recv");
  TORCH_CHECK(src >= 0 && src < size_ && src != rank_, "cohort recv: bad source rank ", src,
              " (group of ", size_, ", this rank ", rank_, ")");
  return RecvFrom(tensors, src, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::RecvFrom(std::vector<at::Tensor>& tensors,
                                                            int src, int tag) {
  uint64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = received_[{src, tag}]++;
  }
  const std::string key = MessageKey(src, rank_, tag, seq);
  at::Tensor target = tensors[0];
  const std::chrono::milliseconds timeout = timeout_;
  auto work = c10::make_intrusive<CohortWork>(
      rank_, c10d::OpType::RECV, tensors, std::vector<int64_t>{},
      [this, key, target, src, timeout] {
        try {
          store_->wait({key}, timeout);
        } catch (const std::exception&) {
          TORCH_CHECK(false, "cohort recv: no message from rank ", src, " within ", timeout.count(),
                      " ms");
        }
        CopyMessage(store_->get(key), target, src);
        store_->deleteKey(key);
      },
      "recv", 0.0, nullptr);
  work->set_source_rank(src);
  receives_->Push(work);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupCohort::recvAnysource(std::vector<at::Tensor>& tensors,
                                                                 int tag) {
  CheckOneCpuTensor(tensors, "recv");
  at::Tensor target = tensors[0];
  // The finish function sets the work's source rank: it runs while the work
  // is alive, through a pointer set once the work exists.
  auto self = std::make_shared<CohortWork*>(nullptr);
  auto work = c10::make_intrusive<CohortWork>(
      rank_, c10d::OpType::RECVANYSOURCE, tensors, std::vector<int64_t>{},
      [this, target, tag, self] {
        const auto deadline = Clock::now() + timeout_;
        for (int round = 0;; Backoff(&round)) {
          for (int src = 0; src < size_; ++src) {
            if (src == rank_) continue;
            std::string key;
            {
              std::lock_guard<std::mutex> lock(mu_);
              key = MessageKey(src, rank_, tag, received_[{src, tag}]);
            }
            if (!store_->check({key})) continue;
            {
              std::lock_guard<std::mutex> lock(mu_);
              ++received_[{src, tag}];
            }
            CopyMessage(store_->get(key), target, src);
            store_->deleteKey(key);
            (*self)->set_source_rank(src);
            return;
          }
          TORCH_CHECK(Clock::now() < deadline, "cohort recv (any source): no message with tag ",
                      tag, " within ", timeout_.count(), " ms");
        }
      },
      "recv", 0.0, nullptr);
  *self = work.get();
  receives_->Push(work);
  return work;
}

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
