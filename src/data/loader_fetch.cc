// The read-ahead thread and its hand-over to the workers.
#include "data/loader_fetch.h"

namespace cohort::data {

ChunkFetcher::ChunkFetcher(Repository* repo, std::string commit_id,
                           const std::vector<ChunkRef>* chunks, const LoaderPlan* plan)
    : repo_(repo),
      commit_id_(std::move(commit_id)),
      chunks_(chunks),
      plan_(plan),
      slots_(plan->loads.size()),
      uses_left_(plan->loads.size()) {
  for (size_t i = 0; i < plan->loads.size(); ++i) uses_left_[i] = plan->loads[i].uses;
  thread_ = std::thread([this] { Run(); });
}

ChunkFetcher::~ChunkFetcher() {
  Stop();
  thread_.join();
}

void ChunkFetcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  freed_.notify_all();
  fetched_.notify_all();
}

void ChunkFetcher::Run() {
  for (size_t load = 0; load < plan_->loads.size(); ++load) {
    if (!WaitForRoom()) return;
    const ChunkRef& ref = (*chunks_)[plan_->loads[load].chunk];
    Result<DecodedChunk> chunk = repo_->LoadChunk(commit_id_, ref);
    std::lock_guard<std::mutex> lock(mu_);
    if (!chunk.ok()) {
      error_ = chunk.status();
      next_ = plan_->loads.size();
      fetching_ = false;
      fetched_.notify_all();
      return;
    }
    slots_[load] = std::move(*chunk);
    next_ = load + 1;
    max_resident_ = std::max(max_resident_, ++resident_);
    fetched_.notify_all();
  }
  std::lock_guard<std::mutex> lock(mu_);
  fetching_ = false;  // later releases free their chunks themselves
}

bool ChunkFetcher::WaitForRoom() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    freed_.wait(lock, [&] { return stop_ || !retired_.empty() || resident_ < plan_->capacity; });
    if (stop_) return false;
    if (retired_.empty()) return true;
    std::vector<DecodedChunk> retired;
    retired.swap(retired_);
    lock.unlock();
    const size_t freed = retired.size();
    retired.clear();  // unmaps them, outside the lock
    lock.lock();
    resident_ -= freed;
  }
}

Result<const DecodedChunk*> ChunkFetcher::Wait(uint32_t load) {
  std::unique_lock<std::mutex> lock(mu_);
  fetched_.wait(lock, [&] { return stop_ || load < next_; });
  if (slots_[load]) return &*slots_[load];
  if (!error_.ok()) return error_;
  return Status::Internal("the loader stopped before chunk load " + std::to_string(load));
}

// Freeing a chunk unmaps it (TLB shootdown, thousands of page-table
// entries): the read-ahead thread does that while it is still running, so the
// worker goes straight back to copying samples; never under the lock.
void ChunkFetcher::Release(uint32_t load) {
  std::optional<DecodedChunk> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (--uses_left_[load] != 0 || !slots_[load]) return;  // a failed load was never resident
    if (fetching_) {
      retired_.push_back(std::move(*slots_[load]));  // still resident until the thread frees it
    } else {
      done = std::move(slots_[load]);
      --resident_;
    }
    slots_[load].reset();
  }
  freed_.notify_one();
}

size_t ChunkFetcher::max_resident() const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_resident_;
}

}  // namespace cohort::data
