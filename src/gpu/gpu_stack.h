// GpuStack: the GPU libraries this process found at run time (the CUDA
// driver, NVRTC, NCCL) and, for each one missing, why: every path tried and
// the loader's reason. Without a GPU nothing here is ever required; the
// first CUDA tensor asks driver() and gets the error to show the user, e.g.
//   CUDA driver not found (tried libcuda.so.1: cannot open shared object
//   file: No such file or directory)
#ifndef COHORT_GPU_GPU_STACK_H_
#define COHORT_GPU_GPU_STACK_H_

#include <memory>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "common/env_config.h"
#include "gpu/cuda_api.h"
#include "gpu/kernel_compiler.h"
#include "gpu/nccl_api.h"

namespace cohort::gpu {

enum class GpuTransportSetting { kAuto, kIpc, kNccl, kStaged };

struct GpuStackOptions {
  std::vector<std::string> library_folders;  // COHORT_CUDA_LIBRARY_PATH, searched first
  // Also the loader's own search, the wheels beside loaded libraries and
  // the CUDA toolkit. Tests turn it off to make the list of paths tried exact.
  bool search_default_locations = true;
  // Python path entries (site-packages) whose nvidia/ folder holds wheels;
  // the Python module passes sys.path.
  std::vector<std::string> python_paths;
  // CUDA toolkit library folders ($CUDA_HOME/lib64, /usr/local/cuda/lib64).
  std::vector<std::string> toolkit_dirs;
  std::string kernel_cache_dir;  // "" (no disk cache) or a folder; see GpuStackOptionsFromEnv
  GpuTransportSetting transport = GpuTransportSetting::kAuto;  // COHORT_GPU_TRANSPORT
  size_t buffer_bytes = 64 << 20;                              // COHORT_GPU_BUFFER_BYTES
};

// COHORT_CUDA_LIBRARY_PATH, CUDA_HOME, COHORT_GPU_TRANSPORT, COHORT_GPU_BUFFER_BYTES and
// COHORT_KERNEL_CACHE_DIR (unset: $XDG_CACHE_HOME/cohort/kernels, else
// $HOME/.cache/cohort/kernels; "off": none), through the settings table.
Result<GpuStackOptions> GpuStackOptionsFromEnv(const EnvLookup& env);

class GpuStack {
 public:
  // Tries every library; never fails (what is missing is recorded).
  static std::unique_ptr<GpuStack> Load(const GpuStackOptions& options);

  // The driver, or why there is none (kNotInitialized).
  Result<CudaApi*> driver();
  Result<KernelCompiler*> compiler();
  Result<NcclApi*> nccl();
  const GpuStackOptions& options() const { return options_; }

  // One line per library: what was found where, or why not.
  std::string Report() const;

 private:
  explicit GpuStack(GpuStackOptions options) : options_(std::move(options)) {}

  GpuStackOptions options_;
  std::unique_ptr<CudaApi> driver_;
  Status driver_status_;
  std::unique_ptr<KernelCompiler> compiler_;
  Status compiler_status_;
  std::string compiler_path_;
  std::unique_ptr<NcclApi> nccl_;
  Status nccl_status_;
};

// The paths of the shared libraries loaded in this process (from the
// dynamic loader's list), for finding the wheels torch loaded its CUDA from.
std::vector<std::string> LoadedLibraryPaths();

}  // namespace cohort::gpu

#endif  // COHORT_GPU_GPU_STACK_H_
