// RAII streams and events, and the one way cohort's host code waits for the
// GPU: polling an event against a deadline (never an unbounded
// cuEventSynchronize), so a hung kernel or a stuck peer becomes a timeout
// with a message instead of a hang.
#ifndef COHORT_GPU_STREAM_H_
#define COHORT_GPU_STREAM_H_

#include <functional>
#include <string>

#include "common/deadline.h"
#include "gpu/cuda_api.h"

namespace cohort::gpu {

class Stream {
 public:
  Stream() = default;
  // A non-blocking stream (it does not synchronize with the legacy default
  // stream) on the current device.
  static Result<Stream> Create(CudaApi& api);
  ~Stream() { Release(); }
  Stream(Stream&& other) noexcept { *this = std::move(other); }
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  StreamHandle handle() const { return handle_; }
  void Release();

 private:
  CudaApi* api_ = nullptr;
  StreamHandle handle_ = nullptr;
};

class Event {
 public:
  Event() = default;
  static Result<Event> Create(CudaApi& api);
  ~Event() { Release(); }
  Event(Event&& other) noexcept { *this = std::move(other); }
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  EventHandle handle() const { return handle_; }
  bool valid() const { return handle_ != nullptr; }
  void Release();

 private:
  CudaApi* api_ = nullptr;
  EventHandle handle_ = nullptr;
};

// Polls `event` until the work before its last record is done. Between
// polls, `check` (when given) may fail the wait early (a peer that failed).
// Past the deadline: kTimeout "timed out after S s waiting for the GPU to
// finish <what>".
Status WaitForEvent(CudaApi& api, EventHandle event, Deadline deadline, const std::string& what,
                    const std::function<Status()>& check = nullptr);

// Records `event` on `stream` and waits for it (WaitForEvent).
Status SynchronizeStream(CudaApi& api, StreamHandle stream, EventHandle event, Deadline deadline,
                         const std::string& what, const std::function<Status()>& check = nullptr);

}  // namespace cohort::gpu

#endif  // COHORT_GPU_STREAM_H_
