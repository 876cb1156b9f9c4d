// GpuTensors: checks and events at submission, the per-set GPU collectives,
// and completions per handle (gpu_tensors.h).
#include "engine/gpu_tensors.h"

#include <string>

#include "common/logging.h"
#include "engine/request_checks.h"

namespace cohort {
namespace {

std::string DeviceName(int device) { return "CUDA device " + std::to_string(device); }

// The operations whose results the engine can leave in device memory.
Status CheckKindOnDevice(const Request& r) {
  const Announcement& a = r.what;
  switch (a.kind) {
    case RequestKind::kAllreduce:
    case RequestKind::kBroadcast:
      break;
    case RequestKind::kAllgather:
    case RequestKind::kReduceScatter:
      if (r.recv_elements < 0) {
        return Status::InvalidArgument(
            "a GPU tensor's output must go to a GPU buffer of the caller's (the _into form); "
            "the engine holds results in host memory only");
      }
      break;
    default:
      return Status::InvalidArgument(
          std::string(RequestKindName(a.kind)) +
          " of GPU tensors is not supported by the engine (copy the tensor to the host)");
  }
  if (a.compression != 0) {
    return Status::InvalidArgument(
        "wire compression of GPU tensors is not supported (compress the tensor before the "
        "allreduce, as cohort.torch's Compression classes do)");
  }
  if (a.kind == RequestKind::kReduceScatter && (a.prescale != 1.0 || a.postscale != 1.0)) {
    return Status::InvalidArgument(
        "scale factors of a reduce-scatter of GPU tensors are not supported (scale the tensor "
        "before and after)");
  }
  return Status::OK();
}

}  // namespace

GpuTensors::~GpuTensors() {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.clear();  // completions return their events before the orderings go
  sets_.clear();     // waits for each set's queued work (GpuCollectives' destructor)
  for (gpu::EventHandle e : all_events_) {
    Status destroyed = deps_.api->DestroyEvent(e);
    if (!destroyed.ok()) {
      COHORT_LOG(kWarning) << "destroying a CUDA event: " << destroyed.message();
    }
  }
}

int GpuTensors::device() const {
  std::lock_guard<std::mutex> lock(mu_);
  return device_;
}

gpu::CudaApi* GpuTensors::api() const {
  std::lock_guard<std::mutex> lock(mu_);
  return deps_.api;
}

Status GpuTensors::Admit(Request* request) {
  if (request->device >= 0) return AdmitOnDevice(request);
  gpu::CudaApi* cuda = api();
  if (cuda == nullptr || request->what.elements() == 0) return Status::OK();
  // This process runs GPU tensors: a device buffer passed as a host one
  // would be read and written with memcpy. One pointer query each.
  for (const void* buffer : {request->send, static_cast<const void*>(request->recv)}) {
    if (buffer == nullptr) continue;
    Result<gpu::PointerInfo> info = cuda->GetPointerInfo(buffer);
    if (info.ok() && info->kind == gpu::PointerInfo::Kind::kDevice) {
      return Status::InvalidArgument(
          DescribeRequest(*request) + ": its buffer is memory of " + DeviceName(info->device) +
          " but was submitted as a host tensor (pass its device and stream)");
    }
  }
  return Status::OK();
}

Status GpuTensors::AdmitOnDevice(Request* r) {
  const std::string what = DescribeRequest(*r) + " on " + DeviceName(r->device);
  if (Status s = CheckKindOnDevice(*r); !s.ok()) return s.WithContext(what);
  if (provider_ == nullptr) {
    return Status::NotInitialized(what + ": this engine was started without a GPU stack");
  }
  Result<gpu::GpuDeps> deps = provider_->Deps();
  if (!deps.ok()) return deps.status().WithContext(what);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (deps_.api == nullptr) deps_ = *deps;
    if (device_ >= 0 && device_ != r->device) {
      return Status::InvalidArgument(
          what + ": this rank's GPU tensors are on " + DeviceName(device_) +
          "; a rank uses one device (e.g. torch.cuda.set_device(local_rank()) before the first)");
    }
  }
  gpu::CudaApi& cuda = *deps->api;
  if (Status s = cuda.UseDevice(r->device); !s.ok()) return s.WithContext(what);
  if (r->what.elements() > 0) {
    COHORT_RETURN_IF_ERROR(CheckBuffer(*r, r->send, "input", r->device));
    if (r->recv_elements != 0)
      COHORT_RETURN_IF_ERROR(CheckBuffer(*r, r->recv, "output", r->device));
  }
  Result<gpu::EventHandle> event = TakeEvent();
  if (!event.ok()) return event.status().WithContext(what);
  if (Status s = cuda.RecordEvent(*event, r->stream); !s.ok()) {
    GiveEvent(*event);
    return s.WithContext(what + ": recording the caller's stream");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (device_ < 0) device_ = r->device;
  }
  r->ready_event = *event;
  r->what.on_device = true;
  return Status::OK();
}

void GpuTensors::Drop(const Request& request) {
  if (request.ready_event != nullptr) GiveEvent(request.ready_event);
}

Status GpuTensors::CheckBuffer(const Request& r, const void* buffer, const char* which,
                               int device) {
  if (buffer == nullptr) return Status::OK();  // broadcast has no input; CheckRequest did nulls
  Result<gpu::PointerInfo> info = api()->GetPointerInfo(buffer);
  if (!info.ok()) return info.status().WithContext(DescribeRequest(r));
  if (info->kind == gpu::PointerInfo::Kind::kDevice && info->device == device) return Status::OK();
  return Status::InvalidArgument(DescribeRequest(r) + ": its " + which + " buffer is " +
                                 (info->kind == gpu::PointerInfo::Kind::kHost
                                      ? std::string("host memory")
                                      : "memory of " + DeviceName(info->device)) +
                                 ", not memory of " + DeviceName(device) +
                                 " (host and GPU buffers cannot be mixed in one operation)");
}

Result<gpu::EventHandle> GpuTensors::TakeEvent() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!free_events_.empty()) {
    gpu::EventHandle e = free_events_.back();
    free_events_.pop_back();
    return e;
  }
  Result<gpu::EventHandle> created = deps_.api->CreateEvent();
  if (created.ok()) all_events_.push_back(*created);
  return created;
}

void GpuTensors::GiveEvent(gpu::EventHandle event) {
  std::lock_guard<std::mutex> lock(mu_);
  free_events_.push_back(event);
}

Result<GpuTensors::SetState*> GpuTensors::ForSet(int set_id, Communicator& comm) {
  auto found = sets_.find(set_id);
  if (found != sets_.end()) return found->second.get();
  gpu::GpuDeps deps;
  int device = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    deps = deps_;
    device = device_;
  }
  if (deps.api == nullptr || device < 0) {
    // Only a rank that submitted no GPU tensor gets here: one that joined.
    return Status::InvalidArgument(
        "a GPU collective reached a rank that has submitted no GPU tensor (a rank that joined "
        "takes part only in host allreduces)");
  }
  Result<std::unique_ptr<gpu::GpuCollectives>> created =
      gpu::GpuCollectives::Create(comm, deps, device, provider_->options());
  if (!created.ok()) return created.status().WithContext("setting up GPU collectives");
  auto state = std::make_shared<SetState>();
  state->collectives = std::move(*created);
  state->ordering = std::make_unique<gpu::StreamOrdering>(*deps.api, state->collectives->stream());
  COHORT_LOG(kInfo) << "GPU collectives of process set " << set_id << ": "
                    << state->collectives->Describe();
  SetState* raw = state.get();
  sets_[set_id] = std::move(state);
  return raw;
}

Status GpuTensors::WaitForCallers(SetState& set, const std::vector<Request*>& requests) {
  gpu::CudaApi* cuda = api();
  Status status;
  for (Request* r : requests) {
    if (r->ready_event == nullptr) continue;  // a joined rank's stand-in
    if (status.ok()) status = cuda->StreamWaitEvent(set.collectives->stream(), r->ready_event);
    // The wait is issued (or never will be): the event may be recorded again.
    GiveEvent(r->ready_event);
    r->ready_event = nullptr;
  }
  return status;
}

Status GpuTensors::Finish(int set_id, const std::vector<int64_t>& handles) {
  auto found = sets_.find(set_id);
  if (found == sets_.end()) return Status::Internal("no GPU state for the set that ran");
  Result<gpu::Completion> done = found->second->ordering->Leave();
  if (!done.ok()) return done.status();
  auto shared = std::make_shared<gpu::Completion>(std::move(*done));
  std::lock_guard<std::mutex> lock(mu_);
  for (int64_t h : handles) {
    if (h != 0) pending_[h] = Pending{found->second, shared};
  }
  return Status::OK();
}

void GpuTensors::RemoveSet(int set_id) { sets_.erase(set_id); }

GpuTensors::Pending GpuTensors::Find(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(handle);
  if (it == pending_.end()) return Pending{};
  return it->second;
}

Result<bool> GpuTensors::Done(int64_t handle) {
  Pending p = Find(handle);
  if (p.completion == nullptr) return true;
  return p.set->ordering->Done(*p.completion);
}

Status GpuTensors::Wait(int64_t handle, Deadline deadline) {
  Pending p = Find(handle);
  if (p.completion == nullptr) return Status::OK();
  return p.set->ordering->Wait(*p.completion, deadline);
}

Status GpuTensors::Join(int64_t handle, void* stream) {
  Pending p = Find(handle);
  if (p.completion == nullptr) return Status::OK();
  COHORT_RETURN_IF_ERROR(api()->UseDevice(device()));
  return p.set->ordering->Join(*p.completion, stream);
}

void GpuTensors::Release(int64_t handle) {
  Pending dropped;  // destroyed outside the lock (its completion returns an event under it)
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(handle);
  if (it == pending_.end()) return;
  dropped = std::move(it->second);
  pending_.erase(it);
}

}  // namespace cohort
