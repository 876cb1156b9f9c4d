// HandleTable: the state of every submitted operation, shared between the
// threads that submit and wait and the thread that completes them (the
// engine's, or p2p's progress thread). It sits in common/ because p2p/, below
// the engine, completes handles in it too.
#ifndef COHORT_COMMON_HANDLE_TABLE_H_
#define COHORT_COMMON_HANDLE_TABLE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cohort/status.h"
#include "cohort/types.h"
#include "common/deadline.h"

namespace cohort {

using CompletionCallback = std::function<void(const Status&)>;

class HandleTable {
 public:
  // A new pending handle; `callback` (may be empty) runs on the engine thread
  // when the operation completes, after the handle is marked done.
  int64_t Create(CompletionCallback callback);
  // Marks `handle` done with `status` and, for operations that produce a
  // new tensor (allgather, reduce-scatter, alltoall), its output.
  void Complete(int64_t handle, const Status& status, TensorResult output = {});

  // Done yet? Unknown handles are kInvalidArgument.
  Result<bool> Poll(int64_t handle);
  // Waits for completion until `deadline`; returns the operation's status.
  // With `interrupted`, calls it about every 100 ms and ends the wait with
  // kInterrupted once it returns true.
  Status Wait(int64_t handle, Deadline deadline,
              const std::function<bool()>& interrupted = nullptr);
  // The output of a completed handle (moved out once).
  Status TakeOutput(int64_t handle, TensorResult* output);
  // Forgets a completed handle.
  void Release(int64_t handle);
  // Handles not yet complete that some thread has been waiting for, without
  // a break, since `since` or earlier (the engine's deadlock check).
  std::vector<int64_t> WaitedSince(Clock::time_point since);

 private:
  struct State {
    // One per handle, so a completion wakes only the threads waiting for
    // that handle (a training loop waits on one of ~160 handles at a time;
    // waking it for every completion steals CPU from the engine thread).
    std::unique_ptr<std::condition_variable> done_cv = std::make_unique<std::condition_variable>();
    bool done = false;
    Status status;
    CompletionCallback callback;
    TensorResult output;
    int waiters = 0;                // threads inside Wait() for this handle
    Clock::time_point waited_from;  // when `waiters` last went from 0 to 1
  };

  std::mutex mu_;
  int64_t next_ = 1;
  std::map<int64_t, State> states_;  // guarded by mu_
};

}  // namespace cohort

#endif  // COHORT_COMMON_HANDLE_TABLE_H_
