// CudaApi: the CUDA operations cohort's GPU code uses, behind one small
// interface. DriverCudaApi (driver_cuda_api.h) forwards to the CUDA driver
// found at run time; tests pass a fake (tests/gpu/fake_cuda.h) that models
// device memory as host memory, streams as queues and events as markers, so
// the ordering, IPC and staging logic runs on machines without a GPU.
//
// Semantics are the driver API's: work on one stream runs in order;
// RecordEvent marks the point the stream has reached; StreamWaitEvent makes
// later work on a stream wait for the most recent RecordEvent of that event
// issued before the call (none: no wait); EventDone says whether that point
// has been passed. Calls act on the calling thread's current device, which
// UseDevice sets (the device's primary context, the one torch uses).
#ifndef COHORT_GPU_CUDA_API_H_
#define COHORT_GPU_CUDA_API_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "cohort/status.h"

namespace cohort::gpu {

// A device address (CUdeviceptr). With unified addressing, pinned host
// memory has one too (AsDevicePtr), so one copy call serves every direction.
using DevicePtr = uint64_t;
inline DevicePtr AsDevicePtr(const void* p) { return reinterpret_cast<uintptr_t>(p); }
template <typename T = void>
T* AsPointer(DevicePtr p) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(p));
}

// Opaque driver handles (CUstream, CUevent, CUmodule, CUfunction). A null
// StreamHandle is the legacy default stream.
using StreamHandle = void*;
using EventHandle = void*;
using ModuleHandle = void*;
using FunctionHandle = void*;

// What another process needs to map a device allocation (CUipcMemHandle).
struct IpcMemHandle {
  std::array<char, 64> bytes{};
};

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0;  // compute capability, e.g. 9.0 for H100
  int cc_minor = 0;
  int multiprocessors = 0;
  std::string pci_id;  // "0000:3b:00" (domain:bus:device): equal for the same physical GPU
};

// Where a pointer's memory is: host memory (pageable or pinned), or device
// memory of one device.
struct PointerInfo {
  enum class Kind { kHost, kDevice };
  Kind kind = Kind::kHost;
  int device = -1;  // for kDevice
};

struct LaunchShape {
  unsigned grid = 1;   // blocks (x only)
  unsigned block = 1;  // threads per block (x only)
};

class CudaApi {
 public:
  virtual ~CudaApi() = default;

  // One line for reports: "CUDA driver 13.0 (/usr/lib/x86_64-linux-gnu/libcuda.so.1)".
  virtual std::string Describe() const = 0;

  virtual Result<int> DeviceCount() = 0;
  virtual Result<DeviceInfo> GetDeviceInfo(int device) = 0;
  // Makes `device`'s primary context current on the calling thread.
  virtual Status UseDevice(int device) = 0;

  virtual Result<DevicePtr> Alloc(size_t bytes) = 0;
  virtual Status Free(DevicePtr ptr) = 0;
  // Page-locked host memory usable by every device (CU_MEMHOSTALLOC_PORTABLE).
  virtual Result<void*> AllocPinned(size_t bytes) = 0;
  virtual Status FreePinned(void* ptr) = 0;
  // Copies `bytes` from `src` to `dst` in stream order (device or pinned host
  // memory on either side, peers' IPC mappings included).
  virtual Status CopyAsync(DevicePtr dst, DevicePtr src, size_t bytes, StreamHandle stream) = 0;

  virtual Result<StreamHandle> CreateStream() = 0;
  virtual Status DestroyStream(StreamHandle stream) = 0;
  // Events without timing (cheapest to record and wait on).
  virtual Result<EventHandle> CreateEvent() = 0;
  virtual Status DestroyEvent(EventHandle event) = 0;
  virtual Status RecordEvent(EventHandle event, StreamHandle stream) = 0;
  virtual Status StreamWaitEvent(StreamHandle stream, EventHandle event) = 0;
  // Non-blocking: true once the work before the event's last record is done.
  virtual Result<bool> EventDone(EventHandle event) = 0;

  virtual Result<IpcMemHandle> IpcGetMemHandle(DevicePtr ptr) = 0;
  // Maps a peer process's allocation; never this process's own.
  virtual Result<DevicePtr> IpcOpenMemHandle(const IpcMemHandle& handle) = 0;
  virtual Status IpcCloseMemHandle(DevicePtr ptr) = 0;

  // `image`: what KernelCompiler::Compile produced (a cubin or PTX).
  virtual Result<ModuleHandle> LoadModule(const std::string& image) = 0;
  virtual Status UnloadModule(ModuleHandle module) = 0;
  virtual Result<FunctionHandle> GetFunction(ModuleHandle module, const std::string& name) = 0;
  // `params[i]` points at the i-th kernel argument (cuLaunchKernel's kernelParams).
  virtual Status Launch(FunctionHandle function, LaunchShape shape, StreamHandle stream,
                        void** params) = 0;

  virtual Result<PointerInfo> GetPointerInfo(const void* ptr) = 0;
};

}  // namespace cohort::gpu

#endif  // COHORT_GPU_CUDA_API_H_
