// CohortWork and the completion thread (see work.h).
#include "c10d/work.h"

#include <c10/util/Exception.h>

#include "cohort/c_api.h"

namespace cohort_c10d {

void ThrowCohortError(const std::string& what, const char* message) {
  TORCH_CHECK(false, "cohort ", what, ": ", message);
}

CohortWork::CohortWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()))) {}

void CohortWork::Complete(std::exception_ptr error) { finish(error); }

void CohortWork::CompleteFuture() {
  std::exception_ptr error = exception();
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

CallbackRunner::~CallbackRunner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void CallbackRunner::Run(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(fn));
    // Idle threads each take one queued item; start one for any item left over.
    if (static_cast<int>(queue_.size()) > idle_) threads_.emplace_back([this] { Loop(); });
  }
  cv_.notify_one();
}

// Drains the queue even when stopping.
void CallbackRunner::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;
    std::function<void()> fn = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    fn();
    lock.lock();
  }
}

CompletionQueue::CompletionQueue(double timeout_seconds)
    : timeout_seconds_(timeout_seconds), thread_([this] { Run(); }) {}

CompletionQueue::~CompletionQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CompletionQueue::Push(PendingOp op) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(op));
  }
  cv_.notify_one();
}

// Drains the queue even when stopping, so no Work is left incomplete.
void CompletionQueue::Run() {
  for (;;) {
    PendingOp op;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      op = std::move(queue_.front());
      queue_.pop_front();
    }
    Finish(op);
  }
}

void CompletionQueue::Finish(PendingOp& op) {
  std::exception_ptr error;
  try {
    for (int64_t handle : op.handles) {
      cohort_error err;
      const int code = cohort_wait(handle, timeout_seconds_, &err);
      if (code != COHORT_OK) ThrowCohortError(op.what, err.message);
    }
    if (op.finish) op.finish();
  } catch (...) {
    error = std::current_exception();
  }
  // Results were taken by `finish`; a failed or unread handle is forgotten here.
  for (int64_t handle : op.handles) cohort_release(handle);
  op.work->Complete(error);
  callbacks_.Run([work = op.work] { work->CompleteFuture(); });
}

}  // namespace cohort_c10d
