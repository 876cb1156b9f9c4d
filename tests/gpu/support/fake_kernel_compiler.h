// FakeKernelCompiler: a KernelCompiler for FakeCuda. "Compiling" a kernel's
// source yields "fake-module:<kernel name>", which FakeCuda::LoadModule
// resolves to the kernel's host build (host_kernels.h). It checks that the
// source defines the kernel it is asked for, counts compilations, and can be
// told to fail.
#ifndef COHORT_TESTS_GPU_SUPPORT_FAKE_KERNEL_COMPILER_H_
#define COHORT_TESTS_GPU_SUPPORT_FAKE_KERNEL_COMPILER_H_

#include <atomic>
#include <string>

#include "gpu/kernel_compiler.h"

namespace cohort::gpu::testing {

class FakeKernelCompiler : public KernelCompiler {
 public:
  explicit FakeKernelCompiler(std::string version = "fake-compiler 1")
      : version_(std::move(version)) {}
  std::string Version() const override { return version_; }
  Result<std::string> Compile(const std::string& source, const std::string& name, int cc_major,
                              int cc_minor) override;

  int compiled() const { return compiled_; }
  void set_fail(bool fail) { fail_ = fail; }

 private:
  std::string version_;
  std::atomic<int> compiled_{0};
  std::atomic<bool> fail_{false};
};

}  // namespace cohort::gpu::testing

#endif  // COHORT_TESTS_GPU_SUPPORT_FAKE_KERNEL_COMPILER_H_
