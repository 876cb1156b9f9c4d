// The reduction kernels generated for the host (gpu/reduce_kernel_source.h,
// KernelTarget::kHost), compiled into the tests at build time by
// tests/gpu/write_host_kernels.cc: each entry calls one kernel with a
// pointer to its argument block (gpu::ReduceKernelArgs).
#ifndef COHORT_TESTS_GPU_SUPPORT_HOST_KERNELS_H_
#define COHORT_TESTS_GPU_SUPPORT_HOST_KERNELS_H_

#include <cstddef>
#include <string>

namespace cohort::gpu::testing {

using HostKernel = void (*)(const void* args);

struct HostKernelEntry {
  const char* name;
  HostKernel run;
};

extern const HostKernelEntry kHostReduceKernels[];
extern const size_t kHostReduceKernelCount;

// The entry named `name`; null when there is none.
HostKernel FindHostKernel(const std::string& name);

}  // namespace cohort::gpu::testing

#endif  // COHORT_TESTS_GPU_SUPPORT_HOST_KERNELS_H_
