// The engine/caller stream-ordering contract (stream_ordering.h).
#include "gpu/stream_ordering.h"

#include <utility>

#include "common/logging.h"

namespace cohort::gpu {

Completion::~Completion() {
  if (owner_ != nullptr && event_ != nullptr) owner_->Give(event_);
}

Completion& Completion::operator=(Completion&& other) noexcept {
  if (this != &other) {
    if (owner_ != nullptr && event_ != nullptr) owner_->Give(event_);
    owner_ = std::exchange(other.owner_, nullptr);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

StreamOrdering::~StreamOrdering() {
  for (EventHandle e : all_) {
    Status destroyed = api_.DestroyEvent(e);
    if (!destroyed.ok()) {
      COHORT_LOG(kWarning) << "destroying a CUDA event: " << destroyed.message();
    }
  }
}

Result<EventHandle> StreamOrdering::Take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pool_.empty()) {
      EventHandle e = pool_.back();
      pool_.pop_back();
      return e;
    }
  }
  Result<EventHandle> created = api_.CreateEvent();
  if (!created.ok()) return created.status();
  std::lock_guard<std::mutex> lock(mu_);
  all_.push_back(*created);
  return *created;
}

void StreamOrdering::Give(EventHandle event) {
  std::lock_guard<std::mutex> lock(mu_);
  pool_.push_back(event);
}

size_t StreamOrdering::events_created() const {
  std::lock_guard<std::mutex> lock(mu_);
  return all_.size();
}

Status StreamOrdering::Enter(StreamHandle caller) {
  if (caller == engine_) return Status::OK();  // one stream is already ordered
  Result<EventHandle> e = Take();
  if (!e.ok()) return e.status();
  Status s = api_.RecordEvent(*e, caller);
  if (s.ok()) s = api_.StreamWaitEvent(engine_, *e);
  // The wait is issued (or nothing was): the event may be recorded again.
  Give(*e);
  return s;
}

Result<Completion> StreamOrdering::Leave() {
  Result<EventHandle> e = Take();
  if (!e.ok()) return e.status();
  Completion completion(this, *e);
  COHORT_RETURN_IF_ERROR(api_.RecordEvent(*e, engine_));
  return completion;
}

Status StreamOrdering::Join(const Completion& completion, StreamHandle caller) {
  if (!completion.valid()) return Status::InvalidArgument("joining an empty GPU completion");
  if (caller == engine_) return Status::OK();
  return api_.StreamWaitEvent(caller, completion.event());
}

Result<bool> StreamOrdering::Done(const Completion& completion) {
  if (!completion.valid()) return Status::InvalidArgument("polling an empty GPU completion");
  return api_.EventDone(completion.event());
}

Status StreamOrdering::Wait(const Completion& completion, Deadline deadline) {
  if (!completion.valid()) return Status::InvalidArgument("waiting on an empty GPU completion");
  return WaitForEvent(api_, completion.event(), deadline, "a collective");
}

}  // namespace cohort::gpu
