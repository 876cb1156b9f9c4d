// RAII owners of device memory (DeviceBuffer) and pinned host memory
// (PinnedBuffer). Freeing happens in the destructor; a failure to free is
// logged (a destructor has no caller to tell), so GPU memory is released on
// every path, errors included.
#ifndef COHORT_GPU_DEVICE_MEMORY_H_
#define COHORT_GPU_DEVICE_MEMORY_H_

#include <cstddef>

#include "gpu/cuda_api.h"

namespace cohort::gpu {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // On the calling thread's current device.
  static Result<DeviceBuffer> Allocate(CudaApi& api, size_t bytes);
  ~DeviceBuffer() { Release(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  DevicePtr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  // Frees now (idempotent).
  void Release();

 private:
  CudaApi* api_ = nullptr;
  DevicePtr ptr_ = 0;
  size_t bytes_ = 0;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  static Result<PinnedBuffer> Allocate(CudaApi& api, size_t bytes);
  ~PinnedBuffer() { Release(); }
  PinnedBuffer(PinnedBuffer&& other) noexcept { *this = std::move(other); }
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return data_; }
  DevicePtr device_ptr() const { return AsDevicePtr(data_); }
  size_t bytes() const { return bytes_; }
  void Release();

 private:
  CudaApi* api_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace cohort::gpu

#endif  // COHORT_GPU_DEVICE_MEMORY_H_
