// CudaApi over libcuda.so.1 (driver_cuda_api.h).
#include "gpu/driver_cuda_api.h"

#include <cstdio>
#include <cstring>

namespace cohort::gpu {

using namespace abi;  // NOLINT: the driver's own names read best unqualified here

Result<std::unique_ptr<DriverCudaApi>> DriverCudaApi::Create(
    std::unique_ptr<SharedLibrary> library) {
  std::unique_ptr<DriverCudaApi> api(new DriverCudaApi(std::move(library)));
  DriverFunctions& f = api->fn_;
  COHORT_RETURN_IF_ERROR(api->library_->Bind({
      {"cuInit", Slot(&f.cuInit)},
      {"cuDriverGetVersion", Slot(&f.cuDriverGetVersion)},
      {"cuGetErrorName", Slot(&f.cuGetErrorName)},
      {"cuGetErrorString", Slot(&f.cuGetErrorString)},
      {"cuDeviceGetCount", Slot(&f.cuDeviceGetCount)},
      {"cuDeviceGet", Slot(&f.cuDeviceGet)},
      {"cuDeviceGetName", Slot(&f.cuDeviceGetName)},
      {"cuDeviceGetAttribute", Slot(&f.cuDeviceGetAttribute)},
      {"cuDevicePrimaryCtxRetain", Slot(&f.cuDevicePrimaryCtxRetain)},
      {"cuDevicePrimaryCtxRelease_v2", Slot(&f.cuDevicePrimaryCtxRelease)},
      {"cuCtxSetCurrent", Slot(&f.cuCtxSetCurrent)},
      {"cuMemAlloc_v2", Slot(&f.cuMemAlloc)},
      {"cuMemFree_v2", Slot(&f.cuMemFree)},
      {"cuMemHostAlloc", Slot(&f.cuMemHostAlloc)},
      {"cuMemFreeHost", Slot(&f.cuMemFreeHost)},
      {"cuMemcpyAsync", Slot(&f.cuMemcpyAsync)},
      {"cuStreamCreate", Slot(&f.cuStreamCreate)},
      {"cuStreamDestroy_v2", Slot(&f.cuStreamDestroy)},
      {"cuStreamWaitEvent", Slot(&f.cuStreamWaitEvent)},
      {"cuEventCreate", Slot(&f.cuEventCreate)},
      {"cuEventDestroy_v2", Slot(&f.cuEventDestroy)},
      {"cuEventRecord", Slot(&f.cuEventRecord)},
      {"cuEventQuery", Slot(&f.cuEventQuery)},
      {"cuIpcGetMemHandle", Slot(&f.cuIpcGetMemHandle)},
      {"cuIpcOpenMemHandle_v2", Slot(&f.cuIpcOpenMemHandle)},
      {"cuIpcCloseMemHandle", Slot(&f.cuIpcCloseMemHandle)},
      {"cuModuleLoadData", Slot(&f.cuModuleLoadData)},
      {"cuModuleUnload", Slot(&f.cuModuleUnload)},
      {"cuModuleGetFunction", Slot(&f.cuModuleGetFunction)},
      {"cuLaunchKernel", Slot(&f.cuLaunchKernel)},
      {"cuPointerGetAttribute", Slot(&f.cuPointerGetAttribute)},
  }));
  COHORT_RETURN_IF_ERROR(api->Check(f.cuInit(0), "cuInit"));
  COHORT_RETURN_IF_ERROR(api->Check(f.cuDriverGetVersion(&api->version_), "cuDriverGetVersion"));
  return api;
}

DriverCudaApi::~DriverCudaApi() {
  for (const auto& [device, ctx] : retained_) fn_.cuDevicePrimaryCtxRelease(device);
}

Status DriverCudaApi::Check(CUresult result, const std::string& call) const {
  if (result == CUDA_SUCCESS) return Status::OK();
  const char* name = nullptr;
  const char* text = nullptr;
  if (fn_.cuGetErrorName == nullptr || fn_.cuGetErrorName(result, &name) != CUDA_SUCCESS) {
    name = nullptr;
  }
  if (fn_.cuGetErrorString == nullptr || fn_.cuGetErrorString(result, &text) != CUDA_SUCCESS) {
    text = nullptr;
  }
  std::string message =
      call +
      " failed: " + (name != nullptr ? std::string(name) : "CUDA error " + std::to_string(result));
  if (text != nullptr) message += std::string(" (") + text + ")";
  return Status::Internal(message);
}

std::string DriverCudaApi::Describe() const {
  return "CUDA driver " + std::to_string(version_ / 1000) + "." +
         std::to_string(version_ % 1000 / 10) + " (" + library_->path() + ")";
}

Result<int> DriverCudaApi::DeviceCount() {
  int count = 0;
  COHORT_RETURN_IF_ERROR(Check(fn_.cuDeviceGetCount(&count), "cuDeviceGetCount"));
  return count;
}

Result<DeviceInfo> DriverCudaApi::GetDeviceInfo(int ordinal) {
  CUdevice dev = 0;
  COHORT_RETURN_IF_ERROR(
      Check(fn_.cuDeviceGet(&dev, ordinal), "cuDeviceGet(" + std::to_string(ordinal) + ")"));
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  COHORT_RETURN_IF_ERROR(
      Check(fn_.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName"));
  info.name = name;
  int domain = 0, bus = 0, slot = 0;
  const std::pair<int*, int> attributes[] = {
      {&info.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {&info.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {&info.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID},
      {&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID},
      {&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID},
  };
  for (const auto& [out, attribute] : attributes) {
    COHORT_RETURN_IF_ERROR(Check(fn_.cuDeviceGetAttribute(out, attribute, dev),
                                 "cuDeviceGetAttribute(" + std::to_string(attribute) + ")"));
  }
  char pci[32];
  std::snprintf(pci, sizeof(pci), "%04x:%02x:%02x", domain, bus, slot);
  info.pci_id = pci;
  return info;
}

Status DriverCudaApi::UseDevice(int ordinal) {
  CUcontext ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = retained_.find(ordinal);
    if (it == retained_.end()) {
      CUdevice dev = 0;
      COHORT_RETURN_IF_ERROR(
          Check(fn_.cuDeviceGet(&dev, ordinal), "cuDeviceGet(" + std::to_string(ordinal) + ")"));
      COHORT_RETURN_IF_ERROR(
          Check(fn_.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain"));
      it = retained_.emplace(ordinal, ctx).first;
    }
    ctx = it->second;
  }
  return Check(fn_.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

Result<DevicePtr> DriverCudaApi::Alloc(size_t bytes) {
  CUdeviceptr ptr = 0;
  COHORT_RETURN_IF_ERROR(
      Check(fn_.cuMemAlloc(&ptr, bytes), "cuMemAlloc(" + std::to_string(bytes) + " bytes)"));
  return DevicePtr{ptr};
}

Status DriverCudaApi::Free(DevicePtr ptr) { return Check(fn_.cuMemFree(ptr), "cuMemFree"); }

Result<void*> DriverCudaApi::AllocPinned(size_t bytes) {
  void* ptr = nullptr;
  COHORT_RETURN_IF_ERROR(Check(fn_.cuMemHostAlloc(&ptr, bytes, CU_MEMHOSTALLOC_PORTABLE),
                               "cuMemHostAlloc(" + std::to_string(bytes) + " bytes)"));
  return ptr;
}

Status DriverCudaApi::FreePinned(void* ptr) {
  return Check(fn_.cuMemFreeHost(ptr), "cuMemFreeHost");
}

Status DriverCudaApi::CopyAsync(DevicePtr dst, DevicePtr src, size_t bytes, StreamHandle stream) {
  if (bytes == 0) return Status::OK();
  return Check(fn_.cuMemcpyAsync(dst, src, bytes, static_cast<CUstream>(stream)),
               "cuMemcpyAsync(" + std::to_string(bytes) + " bytes)");
}

Result<StreamHandle> DriverCudaApi::CreateStream() {
  CUstream stream = nullptr;
  COHORT_RETURN_IF_ERROR(
      Check(fn_.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  return StreamHandle{stream};
}

Status DriverCudaApi::DestroyStream(StreamHandle stream) {
  return Check(fn_.cuStreamDestroy(static_cast<CUstream>(stream)), "cuStreamDestroy");
}

Result<EventHandle> DriverCudaApi::CreateEvent() {
  CUevent event = nullptr;
  COHORT_RETURN_IF_ERROR(
      Check(fn_.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate"));
  return EventHandle{event};
}

Status DriverCudaApi::DestroyEvent(EventHandle event) {
  return Check(fn_.cuEventDestroy(static_cast<CUevent>(event)), "cuEventDestroy");
}

Status DriverCudaApi::RecordEvent(EventHandle event, StreamHandle stream) {
  return Check(fn_.cuEventRecord(static_cast<CUevent>(event), static_cast<CUstream>(stream)),
               "cuEventRecord");
}

Status DriverCudaApi::StreamWaitEvent(StreamHandle stream, EventHandle event) {
  return Check(fn_.cuStreamWaitEvent(static_cast<CUstream>(stream), static_cast<CUevent>(event), 0),
               "cuStreamWaitEvent");
}

Result<bool> DriverCudaApi::EventDone(EventHandle event) {
  const CUresult r = fn_.cuEventQuery(static_cast<CUevent>(event));
  if (r == CUDA_ERROR_NOT_READY) return false;
  COHORT_RETURN_IF_ERROR(Check(r, "cuEventQuery"));
  return true;
}

Result<IpcMemHandle> DriverCudaApi::IpcGetMemHandle(DevicePtr ptr) {
  CUipcMemHandle raw;
  COHORT_RETURN_IF_ERROR(Check(fn_.cuIpcGetMemHandle(&raw, ptr), "cuIpcGetMemHandle"));
  IpcMemHandle handle;
  static_assert(sizeof(raw.reserved) == sizeof(handle.bytes));
  std::memcpy(handle.bytes.data(), raw.reserved, sizeof(raw.reserved));
  return handle;
}

Result<DevicePtr> DriverCudaApi::IpcOpenMemHandle(const IpcMemHandle& handle) {
  CUipcMemHandle raw;
  std::memcpy(raw.reserved, handle.bytes.data(), sizeof(raw.reserved));
  CUdeviceptr ptr = 0;
  COHORT_RETURN_IF_ERROR(Check(
      fn_.cuIpcOpenMemHandle(&ptr, raw, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle"));
  return DevicePtr{ptr};
}

Status DriverCudaApi::IpcCloseMemHandle(DevicePtr ptr) {
  return Check(fn_.cuIpcCloseMemHandle(ptr), "cuIpcCloseMemHandle");
}

Result<ModuleHandle> DriverCudaApi::LoadModule(const std::string& image) {
  CUmodule module = nullptr;
  COHORT_RETURN_IF_ERROR(Check(fn_.cuModuleLoadData(&module, image.data()), "cuModuleLoadData"));
  return ModuleHandle{module};
}

Status DriverCudaApi::UnloadModule(ModuleHandle module) {
  return Check(fn_.cuModuleUnload(static_cast<CUmodule>(module)), "cuModuleUnload");
}

Result<FunctionHandle> DriverCudaApi::GetFunction(ModuleHandle module, const std::string& name) {
  CUfunction fn = nullptr;
  COHORT_RETURN_IF_ERROR(
      Check(fn_.cuModuleGetFunction(&fn, static_cast<CUmodule>(module), name.c_str()),
            "cuModuleGetFunction(" + name + ")"));
  return FunctionHandle{fn};
}

Status DriverCudaApi::Launch(FunctionHandle function, LaunchShape shape, StreamHandle stream,
                             void** params) {
  return Check(fn_.cuLaunchKernel(static_cast<CUfunction>(function), shape.grid, 1, 1, shape.block,
                                  1, 1, 0, static_cast<CUstream>(stream), params, nullptr),
               "cuLaunchKernel");
}

Result<PointerInfo> DriverCudaApi::GetPointerInfo(const void* ptr) {
  unsigned memory_type = 0;
  const CUresult r =
      fn_.cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, AsDevicePtr(ptr));
  // Memory the driver does not know (plain malloc) is an invalid value to it: host memory.
  if (r != CUDA_SUCCESS || memory_type != CU_MEMORYTYPE_DEVICE) return PointerInfo{};
  int device = -1;
  COHORT_RETURN_IF_ERROR(Check(
      fn_.cuPointerGetAttribute(&device, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, AsDevicePtr(ptr)),
      "cuPointerGetAttribute(DEVICE_ORDINAL)"));
  PointerInfo info;
  info.kind = PointerInfo::Kind::kDevice;
  info.device = device;
  return info;
}

}  // namespace cohort::gpu
