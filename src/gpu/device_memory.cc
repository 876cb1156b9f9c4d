// Device and pinned host buffers (device_memory.h).
#include "gpu/device_memory.h"

#include <utility>

#include "common/logging.h"

namespace cohort::gpu {

Result<DeviceBuffer> DeviceBuffer::Allocate(CudaApi& api, size_t bytes) {
  DeviceBuffer b;
  if (bytes == 0) return b;
  Result<DevicePtr> ptr = api.Alloc(bytes);
  if (!ptr.ok()) return ptr.status();
  b.api_ = &api;
  b.ptr_ = *ptr;
  b.bytes_ = bytes;
  return b;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    api_ = std::exchange(other.api_, nullptr);
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::Release() {
  if (api_ == nullptr || ptr_ == 0) return;
  Status freed = api_->Free(ptr_);
  if (!freed.ok()) {
    COHORT_LOG(kWarning) << "freeing GPU memory: " << freed.message();
  }
  api_ = nullptr;
  ptr_ = 0;
  bytes_ = 0;
}

Result<PinnedBuffer> PinnedBuffer::Allocate(CudaApi& api, size_t bytes) {
  PinnedBuffer b;
  if (bytes == 0) return b;
  Result<void*> data = api.AllocPinned(bytes);
  if (!data.ok()) return data.status();
  b.api_ = &api;
  b.data_ = *data;
  b.bytes_ = bytes;
  return b;
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    api_ = std::exchange(other.api_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void PinnedBuffer::Release() {
  if (api_ == nullptr || data_ == nullptr) return;
  Status freed = api_->FreePinned(data_);
  if (!freed.ok()) {
    COHORT_LOG(kWarning) << "freeing pinned host memory: " << freed.message();
  }
  api_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace cohort::gpu
