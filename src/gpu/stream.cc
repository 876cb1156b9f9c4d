// Streams, events and bounded waits (stream.h).
#include "gpu/stream.h"

#include <sched.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <utility>

#include "common/logging.h"

namespace cohort::gpu {

Result<Stream> Stream::Create(CudaApi& api) {
  Result<StreamHandle> handle = api.CreateStream();
  if (!handle.ok()) return handle.status();
  Stream s;
  s.api_ = &api;
  s.handle_ = *handle;
  return s;
}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Release();
    api_ = std::exchange(other.api_, nullptr);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void Stream::Release() {
  if (api_ == nullptr) return;
  Status destroyed = api_->DestroyStream(handle_);
  if (!destroyed.ok()) {
    COHORT_LOG(kWarning) << "destroying a CUDA stream: " << destroyed.message();
  }
  api_ = nullptr;
  handle_ = nullptr;
}

Result<Event> Event::Create(CudaApi& api) {
  Result<EventHandle> handle = api.CreateEvent();
  if (!handle.ok()) return handle.status();
  Event e;
  e.api_ = &api;
  e.handle_ = *handle;
  return e;
}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Release();
    api_ = std::exchange(other.api_, nullptr);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void Event::Release() {
  if (api_ == nullptr) return;
  Status destroyed = api_->DestroyEvent(handle_);
  if (!destroyed.ok()) {
    COHORT_LOG(kWarning) << "destroying a CUDA event: " << destroyed.message();
  }
  api_ = nullptr;
  handle_ = nullptr;
}

Status WaitForEvent(CudaApi& api, EventHandle event, Deadline deadline, const std::string& what,
                    const std::function<Status()>& check) {
  const Clock::time_point start = Clock::now();
  // Spin briefly (GPU work of a small collective takes microseconds), then
  // yield, then sleep in short steps so a long wait does not burn a core.
  for (unsigned polls = 0;; ++polls) {
    Result<bool> done = api.EventDone(event);
    if (!done.ok()) return done.status().WithContext("waiting for the GPU to finish " + what);
    if (*done) return Status::OK();
    if (deadline.Expired()) {
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%.1f", SecondsSince(start));
      return Status::Timeout(std::string("timed out after ") + seconds +
                             " s waiting for the GPU to finish " + what);
    }
    if (check && polls % 64 == 63) COHORT_RETURN_IF_ERROR(check());
    if (polls < 256) continue;
    if (polls < 1024) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

Status SynchronizeStream(CudaApi& api, StreamHandle stream, EventHandle event, Deadline deadline,
                         const std::string& what, const std::function<Status()>& check) {
  COHORT_RETURN_IF_ERROR(api.RecordEvent(event, stream));
  return WaitForEvent(api, event, deadline, what, check);
}

}  // namespace cohort::gpu
