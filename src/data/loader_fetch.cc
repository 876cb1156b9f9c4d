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
    {
      std::unique_lock<std::mutex> lock(mu_);
      freed_.wait(lock, [&] { return stop_ || resident_ < plan_->capacity; });
      if (stop_) return;
    }
    const ChunkRef& ref = (*chunks_)[plan_->loads[load].chunk];
    Result<DecodedChunk> chunk = repo_->LoadChunk(commit_id_, ref);
    std::lock_guard<std::mutex> lock(mu_);
    if (!chunk.ok()) {
      error_ = chunk.status();
      next_ = plan_->loads.size();
      fetched_.notify_all();
      return;
    }
    slots_[load] = std::move(*chunk);
    next_ = load + 1;
    max_resident_ = std::max(max_resident_, ++resident_);
    fetched_.notify_all();
  }
}

Result<const DecodedChunk*> ChunkFetcher::Wait(uint32_t load) {
  std::unique_lock<std::mutex> lock(mu_);
  fetched_.wait(lock, [&] { return stop_ || load < next_; });
  if (slots_[load]) return &*slots_[load];
  if (!error_.ok()) return error_;
  return Status::Internal("the loader stopped before chunk load " + std::to_string(load));
}

void ChunkFetcher::Release(uint32_t load) {
  std::lock_guard<std::mutex> lock(mu_);
  if (--uses_left_[load] != 0 || !slots_[load]) return;  // a failed load was never resident
  slots_[load].reset();
  --resident_;
  freed_.notify_one();
}

size_t ChunkFetcher::max_resident() const {
  std::lock_guard<std::mutex> lock(mu_);
  return max_resident_;
}

}  // namespace cohort::data
