// The Work objects the cohort c10d backend returns, and the completion thread
// that finishes them. An operation is submitted to cohort's engine on the
// caller's thread (so every rank names it in the same order and the engine
// can fuse it with its neighbours). Then whoever comes first finishes it
// (waits for its handles, copies results out, completes the Work): the
// caller inside Work::wait, which saves two thread hand-offs on a blocking
// call, or the group's completion thread, which goes through operations in
// submission order so that nobody has to wait for async work and futures
// (DDP's reducer chains its callbacks on them) complete on their own.
#ifndef COHORT_PYTHON_C10D_WORK_H_
#define COHORT_PYTHON_C10D_WORK_H_

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cohort_c10d {

class CallbackRunner;
class CompletionQueue;

class CohortWork : public c10d::Work {
 public:
  // `handles`: the engine operations to wait for (up to `timeout_seconds`
  // each); then `finish` copies results into the outputs (it also keeps every
  // buffer the engine reads alive until then) and may throw, which fails the
  // work. `what` ("allreduce", ...) starts error messages. With a `queue`,
  // the work is completed lazily: by the first wait or successful poll, or
  // by the queue's thread once someone asked for the future. Without one,
  // the creator pushes it to a queue or drives it.
  CohortWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
             std::vector<int64_t> handles, std::function<void()> finish, const char* what,
             double timeout_seconds, const std::shared_ptr<CompletionQueue>& queue);
  // Waits for an operation nobody waited for: the engine may still be
  // writing into buffers this work keeps alive.
  ~CohortWork() override;

  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  int sourceRank() const override { return source_rank_; }
  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout) override;

  // Finishes the work unless another thread already does; a future someone
  // asked for completes on `callbacks` (or inline when null).
  void Drive(CallbackRunner* callbacks);
  void set_source_rank(int rank) { source_rank_ = rank; }

 private:
  std::exception_ptr Run();
  bool EngineDone();

  std::vector<at::Tensor> outputs_;
  std::vector<int64_t> handles_;
  std::function<void()> finish_;
  const char* what_;
  double timeout_seconds_;
  const bool lazy_;
  std::weak_ptr<CompletionQueue> queue_;
  std::atomic<bool> claimed_{false};
  std::mutex future_mu_;
  bool future_requested_ = false;  // guarded by future_mu_
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  int source_rank_ = -1;
};

// Runs future completions, and with them the callbacks chained on the
// futures, on threads of their own: a callback may submit another operation
// and wait for it (PowerSGD's hook does), so it must never run on the
// completion thread. A thread is added whenever none is idle, so a blocked
// callback never holds up another one.
class CallbackRunner {
 public:
  CallbackRunner() = default;
  ~CallbackRunner();
  void Run(std::function<void()> fn);

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  int idle_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// One thread that drives a group's works in submission order. Destruction
// drains the queue, so no work is left incomplete.
class CompletionQueue {
 public:
  CompletionQueue();
  ~CompletionQueue();

  void Push(c10::intrusive_ptr<CohortWork> work);

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<c10::intrusive_ptr<CohortWork>> queue_;
  bool stopping_ = false;
  CallbackRunner callbacks_;  // declared before thread_: outlives it
  std::thread thread_;
};

// Raises the engine's error for a failed c_api.h call as a c10::Error
// (a RuntimeError in Python), prefixed with what was being done.
[[noreturn]] void ThrowCohortError(const std::string& what, const char* message);

}  // namespace cohort_c10d

#endif  // COHORT_PYTHON_C10D_WORK_H_
