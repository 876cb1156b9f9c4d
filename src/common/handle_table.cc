// Handle bookkeeping.
#include "common/handle_table.h"

namespace cohort {

int64_t HandleTable::Create(CompletionCallback callback) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t h = next_++;
  states_[h].callback = std::move(callback);
  return h;
}

void HandleTable::Complete(int64_t handle, const Status& status, TensorResult output) {
  CompletionCallback callback;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = states_.find(handle);
    if (it == states_.end() || it->second.done) return;
    it->second.done = true;
    it->second.status = status;
    it->second.output = std::move(output);
    callback = std::move(it->second.callback);
    // Notified under the lock: a waiter may Release (destroy) the state as
    // soon as it sees `done`.
    it->second.done_cv->notify_all();
  }
  if (callback) callback(status);
}

Result<bool> HandleTable::Poll(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(handle);
  if (it == states_.end()) {
    return Status::InvalidArgument("unknown handle " + std::to_string(handle));
  }
  return it->second.done;
}

Status HandleTable::Wait(int64_t handle, Deadline deadline,
                         const std::function<bool()>& interrupted) {
  constexpr auto kCheckEvery = std::chrono::milliseconds(100);
  std::unique_lock<std::mutex> lock(mu_);
  auto it = states_.find(handle);
  if (it == states_.end()) {
    return Status::InvalidArgument("unknown handle " + std::to_string(handle));
  }
  if (it->second.waiters++ == 0) it->second.waited_from = Clock::now();
  // Counts this thread out however the wait ends (the state may be gone).
  struct Leave {
    HandleTable* table;
    int64_t handle;
    ~Leave() {
      auto left = table->states_.find(handle);
      if (left != table->states_.end()) --left->second.waiters;
    }
  } leave{this, handle};  // destroyed while `lock` is still held
  for (;;) {
    const auto until =
        interrupted ? std::min(deadline.at(), Clock::now() + kCheckEvery) : deadline.at();
    if (it->second.done_cv->wait_until(lock, until, [&] { return it->second.done; })) break;
    if (Clock::now() >= deadline.at()) {
      return Status::Timeout("handle " + std::to_string(handle) + " did not complete in time");
    }
    // Checked without the lock: the check may run Python (signal handlers).
    lock.unlock();
    const bool stop = interrupted();
    lock.lock();
    if (stop)
      return Status::Interrupted("the wait for handle " + std::to_string(handle) +
                                 " was interrupted");
    it = states_.find(handle);  // a concurrent Release may have erased it
    if (it == states_.end()) {
      return Status::InvalidArgument("unknown handle " + std::to_string(handle));
    }
  }
  return it->second.status;
}

Status HandleTable::TakeOutput(int64_t handle, TensorResult* output) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = states_.find(handle);
  if (it == states_.end() || !it->second.done) {
    return Status::InvalidArgument("handle " + std::to_string(handle) + " is not complete");
  }
  *output = std::move(it->second.output);
  return it->second.status;
}

void HandleTable::Release(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  states_.erase(handle);
}

std::vector<int64_t> HandleTable::WaitedSince(Clock::time_point since) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> out;
  for (const auto& [handle, state] : states_) {
    if (!state.done && state.waiters > 0 && state.waited_from <= since) out.push_back(handle);
  }
  return out;
}

}  // namespace cohort
