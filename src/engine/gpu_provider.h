// GpuProvider: where the engine finds the GPU stack when the first tensor in
// GPU memory arrives. The default loads gpu::GpuStack once, on that first
// tensor, so a process that never submits one loads nothing and behaves as
// a CPU-only build; tests give a provider over the fake CUDA API
// (tests/gpu/support).
#ifndef COHORT_ENGINE_GPU_PROVIDER_H_
#define COHORT_ENGINE_GPU_PROVIDER_H_

#include <memory>
#include <string>

#include "cohort/status.h"
#include "gpu/gpu_stack.h"
#include "gpu/transport/gpu_collectives.h"

namespace cohort {

class GpuProvider {
 public:
  virtual ~GpuProvider() = default;
  // What GpuCollectives is built from, or why GPU tensors cannot run in
  // this process: the driver's or NVRTC's error, e.g. "CUDA driver not found
  // (tried libcuda.so.1: ...)". Thread-safe; the same answer every time.
  virtual Result<gpu::GpuDeps> Deps() = 0;
  virtual const gpu::GpuStackOptions& options() const = 0;
  // One line per library: found where, or why not (GpuStack::Report).
  virtual std::string Report() = 0;
  // Horovod's nccl_built() answer:
  // NCCL's version code (NcclApi::Version) when it can be loaded, else 0.
  virtual int NcclVersion() = 0;
};

// Loads gpu::GpuStack with `options` on the first call of any method.
std::unique_ptr<GpuProvider> LoadingGpuProvider(gpu::GpuStackOptions options);

}  // namespace cohort

#endif  // COHORT_ENGINE_GPU_PROVIDER_H_
