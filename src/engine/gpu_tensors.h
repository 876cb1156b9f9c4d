// GpuTensors: the engine's state for tensors in GPU memory, and the
// ordering contract of gpu/stream_ordering.h split across the engine's
// threads:
//
//   submission (the caller's thread): Admit checks the request (the GPU
//     stack loads, its buffers are memory of its device, the rank's one
//     device) and records an event on the caller's stream: the point the
//     collective must wait for. No host synchronization.
//   execution (the engine thread): ForSet gives the process set's GPU
//     collectives (created collectively at the set's first GPU response:
//     responses run in the same order on every rank); WaitForCallers makes
//     the engine's stream wait on the requests' events; the collective is
//     queued on that stream; Finish records one completion event for the
//     handles it served, before they are marked done.
//   completion (any thread): Done polls a handle's completion, Wait blocks
//     (bounded) for callers without a stream, Join makes a caller's stream
//     wait on it; Release forgets it.
//
// A handle without a GPU completion (a host tensor) is done, waited and
// joined trivially. Invariant: every SetState is destroyed before the
// communicator it runs on (the engine destroys this object, or calls
// RemoveSet, before it drops a set).
#ifndef COHORT_ENGINE_GPU_TENSORS_H_
#define COHORT_ENGINE_GPU_TENSORS_H_

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "collectives/communicator.h"
#include "engine/gpu_provider.h"
#include "engine/request.h"
#include "gpu/device_memory.h"
#include "gpu/stream_ordering.h"
#include "gpu/transport/gpu_collectives.h"

namespace cohort {

class GpuTensors {
 public:
  // `provider` may be null: GPU tensors are then refused. It must outlive this.
  explicit GpuTensors(GpuProvider* provider) : provider_(provider) {}
  ~GpuTensors();
  GpuTensors(const GpuTensors&) = delete;
  GpuTensors& operator=(const GpuTensors&) = delete;

  // Submitting thread. A GPU request (device >= 0): checks it, marks it
  // on_device and sets its ready_event. A host request: once this process
  // has loaded the GPU stack, refuses buffers that are device memory (they
  // would be read as host memory). Errors name the request.
  Status Admit(Request* request);
  // A request admitted but never executed (refused, or failed by
  // negotiation): its event goes back to the pool.
  void Drop(const Request& request);

  // The GPU state of one process set on this rank.
  struct SetState {
    std::unique_ptr<gpu::GpuCollectives> collectives;
    std::unique_ptr<gpu::StreamOrdering> ordering;
    gpu::DeviceBuffer fusion;  // grown as fused responses need
  };

  // Engine thread: the set's state, created over `comm` at first use (a
  // collective call: every member reaches it at the same response).
  Result<SetState*> ForSet(int set_id, Communicator& comm);
  // Engine thread: the engine's stream waits for what each request's caller
  // queued before submitting it; the requests' events go back to the pool.
  Status WaitForCallers(SetState& set, const std::vector<Request*>& requests);
  // Engine thread: marks the work queued so far on the set's stream as the
  // completion of `handles` (zeros are skipped: ranks that joined).
  Status Finish(int set_id, const std::vector<int64_t>& handles);
  // Engine thread: drops a removed set (its GPU work is waited for).
  void RemoveSet(int set_id);

  // Any thread, after the handle completed on the host.
  Result<bool> Done(int64_t handle);
  Status Wait(int64_t handle, Deadline deadline);
  // `stream`: a cudaStream_t of the handle's device (null: the legacy default stream).
  Status Join(int64_t handle, void* stream);
  void Release(int64_t handle);

  // The device GPU tensors of this rank are on (-1 before the first).
  int device() const;
  gpu::CudaApi* api() const;

 private:
  struct Pending {
    std::shared_ptr<SetState> set;                // keeps the ordering alive
    std::shared_ptr<gpu::Completion> completion;  // destroyed first (declared last)
  };

  Status AdmitOnDevice(Request* request);
  Status CheckBuffer(const Request& r, const void* buffer, const char* which, int device);
  Result<gpu::EventHandle> TakeEvent();
  void GiveEvent(gpu::EventHandle event);
  Pending Find(int64_t handle);  // empty when the handle has no GPU completion

  GpuProvider* const provider_;
  mutable std::mutex mu_;
  gpu::GpuDeps deps_;  // guarded by mu_; deps_.api set once the stack loaded
  int device_ = -1;    // guarded by mu_
  std::vector<gpu::EventHandle> free_events_;      // guarded by mu_
  std::vector<gpu::EventHandle> all_events_;       // guarded by mu_: destroyed with this object
  std::map<int, std::shared_ptr<SetState>> sets_;  // engine thread only
  std::map<int64_t, Pending> pending_;             // guarded by mu_
};

}  // namespace cohort

#endif  // COHORT_ENGINE_GPU_TENSORS_H_
