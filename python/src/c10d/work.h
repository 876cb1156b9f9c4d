// The Work objects the cohort c10d backend returns, and the completion thread
// that finishes them: an operation is submitted to cohort's engine on the
// caller's thread (so every rank names it in the same order and the engine
// can fuse it with its neighbours), and one thread per process group waits
// for its handles in submission order, copies results out, and completes the
// Work and its Future (which DDP's reducer chains its callbacks on).
#ifndef COHORT_PYTHON_C10D_WORK_H_
#define COHORT_PYTHON_C10D_WORK_H_

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cohort_c10d {

class CohortWork : public c10d::Work {
 public:
  CohortWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs);

  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  int sourceRank() const override { return source_rank_; }

  // Completes the work (successfully when `error` is null); the future is
  // completed separately (CompleteFuture), off the completion thread.
  void Complete(std::exception_ptr error);
  void CompleteFuture();
  void set_source_rank(int rank) { source_rank_ = rank; }

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  int source_rank_ = -1;
};

// One submitted operation: the engine handles to wait for, then `finish`
// (copies results into the output tensors; it also keeps every buffer the
// engine reads alive until then). `finish` may throw; the exception fails
// the work.
struct PendingOp {
  std::vector<int64_t> handles;
  std::function<void()> finish;
  c10::intrusive_ptr<CohortWork> work;
  std::string what;  // "allreduce", ... for error messages
};

// Runs future completions, and with them the callbacks chained on the
// futures, on threads of their own: a callback may submit another operation
// and wait for it (PowerSGD's hook does), so it must never run on the thread
// that completes operations. A thread is added whenever none is idle, so a
// blocked callback never holds up another one.
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

class CompletionQueue {
 public:
  explicit CompletionQueue(double timeout_seconds);
  ~CompletionQueue();

  void Push(PendingOp op);

 private:
  void Run();
  void Finish(PendingOp& op);

  const double timeout_seconds_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<PendingOp> queue_;
  bool stopping_ = false;
  CallbackRunner callbacks_;  // declared before thread_: outlives it
  std::thread thread_;
};

// Raises the engine's error for a failed c_api.h call as a c10::Error
// (a RuntimeError in Python), prefixed with what was being done.
[[noreturn]] void ThrowCohortError(const std::string& what, const char* message);

}  // namespace cohort_c10d

#endif  // COHORT_PYTHON_C10D_WORK_H_
