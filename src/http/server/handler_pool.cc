// The HTTP server's handler threads.
#include "http/server/handler_pool.h"

namespace cohort::http {

void HandlerPool::Submit(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  tasks_.push_back(std::move(task));
  // A new thread only when none is waiting for work: idle ones take it.
  if (idle_ < static_cast<int>(tasks_.size()) && static_cast<int>(threads_.size()) < max_threads_) {
    threads_.emplace_back([this] { Work(); });
  }
  cv_.notify_one();
}

void HandlerPool::Stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    tasks_.clear();
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (std::thread& t : threads) t.join();
}

void HandlerPool::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    ++idle_;
    cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    --idle_;
    if (stopping_) return;
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    task = nullptr;  // the request goes before the lock is taken again
    lock.lock();
  }
}

}  // namespace cohort::http
