// DeviceReducer: launches the reduction kernels (reduce_kernel_source.h) on
// a stream. Inputs beyond the kernel's 16 are reduced in rounds, each
// continuing from the previous round's result, which the arithmetic allows
// because every step rounds to the element type anyway.
#ifndef COHORT_GPU_DEVICE_REDUCE_H_
#define COHORT_GPU_DEVICE_REDUCE_H_

#include <vector>

#include "cohort/types.h"
#include "gpu/cuda_api.h"
#include "gpu/kernel_cache.h"
#include "gpu/reduce_kernel_source.h"

namespace cohort::gpu {

// What one reduction applies (see reduce_kernel_source.h for the formula).
struct ReduceSpec {
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  double prescale = 1;           // applied to every input
  bool first_prescaled = false;  // the first input already carries it
  bool finish = false;           // apply the average's division and postscale
  int ranks = 1;                 // the average's divisor
  double postscale = 1;
};

// The factor a kernel multiplies elements of `type` by for a requested
// scale factor: float16 tensors are scaled by the factor rounded to float16
// first, as Horovod's GPU kernels do (its test_torch.py checks GPU pre- and
// postscale against torch's float16 product of two float16 values); every
// other type uses the factor as given. The host path keeps the float32
// factor for float16, as Horovod's CPU path does.
double DeviceScaleFactor(DataType type, double factor);

class DeviceReducer {
 public:
  DeviceReducer(CudaApi& api, KernelCache& kernels, DeviceInfo device)
      : api_(api), kernels_(kernels), device_(std::move(device)) {}

  // dst[i] = reduction of srcs[k][i] (k in order) for i < count. dst may be
  // one of the first 16 inputs (element-wise in place). Queued on `stream`.
  Status Reduce(DevicePtr dst, const std::vector<DevicePtr>& srcs, size_t count,
                const ReduceSpec& spec, StreamHandle stream);

  const DeviceInfo& device() const { return device_; }

 private:
  Status Launch(const ReduceSpec& spec, ReduceKernelArgs args, StreamHandle stream);

  CudaApi& api_;
  KernelCache& kernels_;
  DeviceInfo device_;
};

}  // namespace cohort::gpu

#endif  // COHORT_GPU_DEVICE_REDUCE_H_
