// DriverCudaApi: CudaApi over the CUDA driver library (libcuda.so.1) found
// at run time. Every failed driver call becomes a Status naming the call and
// the driver's own error name and text.
#ifndef COHORT_GPU_DRIVER_CUDA_API_H_
#define COHORT_GPU_DRIVER_CUDA_API_H_

#include <map>
#include <memory>
#include <mutex>

#include "gpu/cuda_api.h"
#include "gpu/cuda_declarations.h"
#include "gpu/shared_library.h"

namespace cohort::gpu {

class DriverCudaApi : public CudaApi {
 public:
  // Binds the entry points and calls cuInit. Fails (kNotInitialized) when
  // the library lacks one or cuInit fails (no device, driver mismatch).
  static Result<std::unique_ptr<DriverCudaApi>> Create(std::unique_ptr<SharedLibrary> library);
  ~DriverCudaApi() override;

  std::string Describe() const override;
  Result<int> DeviceCount() override;
  Result<DeviceInfo> GetDeviceInfo(int device) override;
  Status UseDevice(int device) override;
  Result<DevicePtr> Alloc(size_t bytes) override;
  Status Free(DevicePtr ptr) override;
  Result<void*> AllocPinned(size_t bytes) override;
  Status FreePinned(void* ptr) override;
  Status CopyAsync(DevicePtr dst, DevicePtr src, size_t bytes, StreamHandle stream) override;
  Result<StreamHandle> CreateStream() override;
  Status DestroyStream(StreamHandle stream) override;
  Result<EventHandle> CreateEvent() override;
  Status DestroyEvent(EventHandle event) override;
  Status RecordEvent(EventHandle event, StreamHandle stream) override;
  Status StreamWaitEvent(StreamHandle stream, EventHandle event) override;
  Result<bool> EventDone(EventHandle event) override;
  Result<IpcMemHandle> IpcGetMemHandle(DevicePtr ptr) override;
  Result<DevicePtr> IpcOpenMemHandle(const IpcMemHandle& handle) override;
  Status IpcCloseMemHandle(DevicePtr ptr) override;
  Result<ModuleHandle> LoadModule(const std::string& image) override;
  Status UnloadModule(ModuleHandle module) override;
  Result<FunctionHandle> GetFunction(ModuleHandle module, const std::string& name) override;
  Status Launch(FunctionHandle function, LaunchShape shape, StreamHandle stream,
                void** params) override;
  Result<PointerInfo> GetPointerInfo(const void* ptr) override;

 private:
  explicit DriverCudaApi(std::unique_ptr<SharedLibrary> library) : library_(std::move(library)) {}
  // OK, or "<call> failed: CUDA_ERROR_X (text)".
  Status Check(abi::CUresult result, const std::string& call) const;

  std::unique_ptr<SharedLibrary> library_;
  abi::DriverFunctions fn_{};
  int version_ = 0;
  std::mutex mu_;
  std::map<int, abi::CUcontext> retained_;  // guarded by mu_: primary contexts to release
};

}  // namespace cohort::gpu

#endif  // COHORT_GPU_DRIVER_CUDA_API_H_
