// CohortWork, its completion thread and callback threads (see work.h).
#include "c10d/work.h"

#include <c10/util/Exception.h>

#include <algorithm>

#include "cohort/c_api.h"

namespace cohort_c10d {
namespace {

// The CUDA devices of `outputs`: a future holding CUDA tensors must list
// them (torch refuses to complete it otherwise) and then orders its
// callbacks after the work on their streams.
std::vector<c10::Device> CudaDevices(const std::vector<at::Tensor>& outputs) {
  std::vector<c10::Device> devices;
  for (const at::Tensor& t : outputs) {
    if (!t.is_cuda()) continue;
    if (std::find(devices.begin(), devices.end(), t.device()) == devices.end()) {
      devices.push_back(t.device());
    }
  }
  return devices;
}

}  // namespace

void ThrowCohortError(const std::string& what, const char* message) {
  TORCH_CHECK(false, "cohort ", what, ": ", message);
}

CohortWork::CohortWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
                       std::vector<int64_t> handles, std::function<void()> finish, const char* what,
                       double timeout_seconds, const std::shared_ptr<CompletionQueue>& queue)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      handles_(std::move(handles)),
      finish_(std::move(finish)),
      what_(what),
      timeout_seconds_(timeout_seconds),
      lazy_(queue != nullptr),
      queue_(queue),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()), CudaDevices(outputs_))) {}

CohortWork::~CohortWork() {
  if (lazy_) Drive(nullptr);
}

c10::intrusive_ptr<c10::ivalue::Future> CohortWork::getFuture() {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(future_mu_);
    first = !future_requested_;
    future_requested_ = true;
  }
  if (first && lazy_ && !claimed_) {
    if (std::shared_ptr<CompletionQueue> queue = queue_.lock()) {
      queue->Push(c10::intrusive_ptr<CohortWork>::reclaim_copy(this));
    } else {
      Drive(nullptr);  // its group is gone, and with it the completion thread
    }
  }
  return future_;
}

bool CohortWork::EngineDone() {
  for (int64_t handle : handles_) {
    int done = 0;
    cohort_error err;
    if (cohort_poll(handle, &done, &err) != COHORT_OK) return true;  // Run reports it
    if (!done) return false;
  }
  return true;
}

bool CohortWork::isCompleted() {
  if (lazy_ && !claimed_ && EngineDone()) Drive(nullptr);
  return c10d::Work::isCompleted();
}

bool CohortWork::wait(std::chrono::milliseconds timeout) {
  if (timeout == kNoTimeout) {
    Drive(nullptr);
    return c10d::Work::wait(timeout);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int round = 0; !isCompleted() && std::chrono::steady_clock::now() < deadline; ++round) {
    std::this_thread::sleep_for(
        std::chrono::microseconds(std::min(50 << std::min(round, 7), 5000)));
  }
  return c10d::Work::wait(std::chrono::milliseconds(1));  // throws when still running
}

std::exception_ptr CohortWork::Run() {
  std::exception_ptr error;
  try {
    for (int64_t handle : handles_) {
      cohort_error err;
      const int code = cohort_wait(handle, timeout_seconds_, &err);
      if (code == COHORT_ERR_TIMEOUT) {
        // Led by the words torch's backends use for this event (gloo: "Timed
        // out waiting 1000ms for recv operation to complete"), which users
        // and tests match on; cohort's detail names who is missing.
        TORCH_CHECK(false, "Timed out waiting ", static_cast<int64_t>(timeout_seconds_ * 1000),
                    "ms for ", what_, " to complete: cohort ", what_, ": ", err.message);
      }
      if (code != COHORT_OK) ThrowCohortError(what_, err.message);
    }
    if (finish_) finish_();
  } catch (...) {
    error = std::current_exception();
  }
  // Results were taken by finish_; a failed or unread handle is forgotten here.
  for (int64_t handle : handles_) cohort_release(handle);
  finish_ = nullptr;  // drops the buffers it kept alive
  return error;
}

void CohortWork::Drive(CallbackRunner* callbacks) {
  if (claimed_.exchange(true)) return;
  const std::exception_ptr error = Run();
  finish(error);
  auto complete_future = [future = future_, outputs = outputs_, error] {
    if (error) {
      future->setError(error);
    } else {
      future->markCompleted(c10::IValue(outputs));
    }
  };
  bool requested;
  {
    std::lock_guard<std::mutex> lock(future_mu_);
    requested = future_requested_;
  }
  // Nobody holds a future that was never asked for, so no callback can run
  // when it completes here; getFuture() after this returns it completed.
  if (!requested || callbacks == nullptr) {
    complete_future();
  } else {
    callbacks->Run(complete_future);
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

CompletionQueue::CompletionQueue() : thread_([this] { Loop(); }) {}

CompletionQueue::~CompletionQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CompletionQueue::Push(c10::intrusive_ptr<CohortWork> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
  }
  cv_.notify_one();
}

void CompletionQueue::Loop() {
  for (;;) {
    c10::intrusive_ptr<CohortWork> work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work->Drive(&callbacks_);
  }
}

}  // namespace cohort_c10d
