// KernelCompiler: turns CUDA C++ source into an image the driver loads
// (CudaApi::LoadModule). NvrtcCompiler (nvrtc_compiler.h) is the real one;
// tests use a fake that hands back the host-compiled kernels' names.
#ifndef COHORT_GPU_KERNEL_COMPILER_H_
#define COHORT_GPU_KERNEL_COMPILER_H_

#include <string>

#include "cohort/status.h"

namespace cohort::gpu {

class KernelCompiler {
 public:
  virtual ~KernelCompiler() = default;
  // Identifies the compiler build; part of every cache key, so a new NVRTC
  // never reuses an older one's output. "NVRTC 13.0".
  virtual std::string Version() const = 0;
  // Compiles `source` (named `name` in messages) for compute capability
  // major.minor. A compilation error carries the compiler's log.
  virtual Result<std::string> Compile(const std::string& source, const std::string& name,
                                      int cc_major, int cc_minor) = 0;
};

}  // namespace cohort::gpu

#endif  // COHORT_GPU_KERNEL_COMPILER_H_
