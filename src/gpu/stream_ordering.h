// StreamOrdering: how work on the engine's own stream is ordered against a
// caller's stream (torch's current stream) without the host waiting on
// either. The contract, which the engine follows for every GPU tensor:
//
//   1. Enter(caller): record an event on the caller's stream and make the
//      engine's stream wait on it. Everything the caller queued before
//      (the kernel that produced a gradient) happens before anything the
//      engine queues after.
//   2. The engine queues the collective on its stream (GpuCollectives).
//   3. Leave(): record a completion event on the engine's stream.
//   4. Join(completion, caller) when the caller synchronizes: the caller's
//      stream waits on that event, so its later work (the optimizer step)
//      sees the results. Done(completion) polls it without blocking.
//
// Events come from a pool. An event is recorded again only after every
// StreamWaitEvent on its previous record has been issued (a wait binds to
// the record current when it is issued, so a later record cannot move it):
// Enter's event returns to the pool at once; a completion returns when its
// owner releases it.
#ifndef COHORT_GPU_STREAM_ORDERING_H_
#define COHORT_GPU_STREAM_ORDERING_H_

#include <memory>
#include <mutex>
#include <vector>

#include "gpu/stream.h"

namespace cohort::gpu {

class StreamOrdering;

// The point on the engine's stream after one piece of work (step 3). It
// returns its event to the pool when destroyed.
class Completion {
 public:
  Completion() = default;
  ~Completion();
  Completion(Completion&& other) noexcept { *this = std::move(other); }
  Completion& operator=(Completion&& other) noexcept;
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;
  EventHandle event() const { return event_; }
  bool valid() const { return event_ != nullptr; }

 private:
  friend class StreamOrdering;
  Completion(StreamOrdering* owner, EventHandle event) : owner_(owner), event_(event) {}
  StreamOrdering* owner_ = nullptr;
  EventHandle event_ = nullptr;
};

class StreamOrdering {
 public:
  // `engine_stream` must outlive this object, and so must every Completion
  // it hands out.
  StreamOrdering(CudaApi& api, StreamHandle engine_stream) : api_(api), engine_(engine_stream) {}
  ~StreamOrdering();

  // Step 1: the engine's later work waits for the caller's earlier work.
  Status Enter(StreamHandle caller);
  // Step 3: marks the engine's work so far.
  Result<Completion> Leave();
  // Step 4: the caller's later work waits for the completion.
  Status Join(const Completion& completion, StreamHandle caller);
  // Whether the work the completion marks is done (non-blocking).
  Result<bool> Done(const Completion& completion);
  // Blocks (polling, bounded) until the completion is done: for callers
  // with no stream of their own (host tensors read after a GPU collective).
  Status Wait(const Completion& completion, Deadline deadline);

  // Events created so far (pooled ones included), for tests.
  size_t events_created() const;

 private:
  friend class Completion;
  Result<EventHandle> Take();
  void Give(EventHandle event);

  CudaApi& api_;
  StreamHandle engine_;
  mutable std::mutex mu_;
  std::vector<EventHandle> pool_;  // guarded by mu_: free events
  std::vector<EventHandle> all_;   // guarded by mu_: every event, destroyed with this object
};

}  // namespace cohort::gpu

#endif  // COHORT_GPU_STREAM_ORDERING_H_
