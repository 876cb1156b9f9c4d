// NvrtcCompiler: KernelCompiler over NVRTC (libnvrtc.so.*) found at run time.
// It asks for a cubin for the device's exact architecture (sm_XY); when the
// NVRTC is older than the device (it does not know sm_XY) or too old to emit
// cubins, it emits PTX for the newest virtual architecture it supports that
// the device can run, and the driver compiles that at load.
#ifndef COHORT_GPU_NVRTC_COMPILER_H_
#define COHORT_GPU_NVRTC_COMPILER_H_

#include <memory>

#include "gpu/cuda_declarations.h"
#include "gpu/kernel_compiler.h"
#include "gpu/shared_library.h"

namespace cohort::gpu {

class NvrtcCompiler : public KernelCompiler {
 public:
  static Result<std::unique_ptr<NvrtcCompiler>> Create(std::unique_ptr<SharedLibrary> library);

  std::string Version() const override;
  Result<std::string> Compile(const std::string& source, const std::string& name, int cc_major,
                              int cc_minor) override;
  const std::string& path() const { return library_->path(); }

 private:
  explicit NvrtcCompiler(std::unique_ptr<SharedLibrary> library) : library_(std::move(library)) {}
  // One compilation; `cubin` selects the output. A failed compile returns
  // kInvalidArgument with the log, other failures kInternal.
  Result<std::string> CompileFor(const std::string& source, const std::string& name,
                                 const std::string& arch, bool cubin);
  // The newest architecture NVRTC supports that is not newer than major.minor.
  int NewestSupportedArch(int cc) const;

  std::unique_ptr<SharedLibrary> library_;
  abi::NvrtcFunctions fn_{};
  int major_ = 0;
  int minor_ = 0;
};

}  // namespace cohort::gpu

#endif  // COHORT_GPU_NVRTC_COMPILER_H_
