// Finding and loading the GPU libraries (gpu_stack.h).
#include "gpu/gpu_stack.h"

#include <link.h>
#include <sys/stat.h>

#include "common/settings.h"
#include "gpu/driver_cuda_api.h"
#include "gpu/library_search.h"
#include "gpu/nccl_library.h"
#include "gpu/nvrtc_compiler.h"

namespace cohort::gpu {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

SearchPlaces PlacesFor(const GpuStackOptions& options) {
  SearchPlaces places;
  places.folders = options.library_folders;
  places.system_search = options.search_default_locations;
  if (!options.search_default_locations) return places;
  places.wheel_roots = WheelRootsOf(LoadedLibraryPaths());
  for (const std::string& entry : options.python_paths) {
    const std::string root = entry + "/nvidia";
    if (IsDirectory(root)) places.wheel_roots.push_back(root);
  }
  places.toolkit_dirs = options.toolkit_dirs;
  return places;
}

}  // namespace

Result<GpuStackOptions> GpuStackOptionsFromEnv(const EnvLookup& env) {
  GpuStackOptions options;
  Result<SettingValue> folders = ReadSetting(env, "COHORT_CUDA_LIBRARY_PATH");
  if (!folders.ok()) return folders.status();
  options.library_folders = SplitFolders(folders->text);
  Result<SettingValue> transport = ReadSetting(env, "COHORT_GPU_TRANSPORT");
  if (!transport.ok()) return transport.status();
  if (transport->text == "ipc") options.transport = GpuTransportSetting::kIpc;
  if (transport->text == "nccl") options.transport = GpuTransportSetting::kNccl;
  if (transport->text == "staged") options.transport = GpuTransportSetting::kStaged;
  Result<SettingValue> buffer = ReadSetting(env, "COHORT_GPU_BUFFER_BYTES");
  if (!buffer.ok()) return buffer.status();
  options.buffer_bytes = static_cast<size_t>(buffer->number);
  if (std::optional<std::string> cuda_home = EnvString(env, "CUDA_HOME")) {
    options.toolkit_dirs.push_back(*cuda_home + "/lib64");
  }
  options.toolkit_dirs.push_back("/usr/local/cuda/lib64");
  Result<SettingValue> cache = ReadSetting(env, "COHORT_KERNEL_CACHE_DIR");
  if (!cache.ok()) return cache.status();
  if (cache->text == "off") {
    options.kernel_cache_dir.clear();
  } else if (!cache->text.empty()) {
    options.kernel_cache_dir = cache->text;
  } else if (std::optional<std::string> xdg = EnvString(env, "XDG_CACHE_HOME")) {
    options.kernel_cache_dir = *xdg + "/cohort/kernels";
  } else if (std::optional<std::string> home = EnvString(env, "HOME")) {
    options.kernel_cache_dir = *home + "/.cache/cohort/kernels";
  }
  return options;
}

std::vector<std::string> LoadedLibraryPaths() {
  std::vector<std::string> paths;
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
          static_cast<std::vector<std::string>*>(data)->push_back(info->dlpi_name);
        }
        return 0;
      },
      &paths);
  return paths;
}

std::unique_ptr<GpuStack> GpuStack::Load(const GpuStackOptions& options) {
  std::unique_ptr<GpuStack> stack(new GpuStack(options));
  const SearchPlaces places = PlacesFor(options);

  Result<std::unique_ptr<SharedLibrary>> driver =
      SharedLibrary::Open("CUDA driver", CandidatePaths(DriverLibrarySpec(), places));
  if (driver.ok()) {
    Result<std::unique_ptr<DriverCudaApi>> api = DriverCudaApi::Create(std::move(*driver));
    if (api.ok()) {
      stack->driver_ = std::move(*api);
    } else {
      stack->driver_status_ = api.status();
    }
  } else {
    stack->driver_status_ = driver.status();
  }

  Result<std::unique_ptr<SharedLibrary>> nvrtc =
      SharedLibrary::Open("NVRTC", CandidatePaths(NvrtcLibrarySpec(), places));
  if (nvrtc.ok()) {
    Result<std::unique_ptr<NvrtcCompiler>> compiler = NvrtcCompiler::Create(std::move(*nvrtc));
    if (compiler.ok()) {
      stack->compiler_path_ = (*compiler)->path();
      stack->compiler_ = std::move(*compiler);
    } else {
      stack->compiler_status_ = compiler.status();
    }
  } else {
    stack->compiler_status_ = nvrtc.status();
  }

  Result<std::unique_ptr<SharedLibrary>> nccl =
      SharedLibrary::Open("NCCL", CandidatePaths(NcclLibrarySpec(), places));
  if (nccl.ok()) {
    Result<std::unique_ptr<NcclLibrary>> api = NcclLibrary::Create(std::move(*nccl));
    if (api.ok()) {
      stack->nccl_ = std::move(*api);
    } else {
      stack->nccl_status_ = api.status();
    }
  } else {
    stack->nccl_status_ = nccl.status();
  }
  return stack;
}

Result<CudaApi*> GpuStack::driver() {
  if (driver_ == nullptr) return driver_status_;
  return driver_.get();
}

Result<KernelCompiler*> GpuStack::compiler() {
  if (compiler_ == nullptr) return compiler_status_;
  return compiler_.get();
}

Result<NcclApi*> GpuStack::nccl() {
  if (nccl_ == nullptr) return nccl_status_;
  return nccl_.get();
}

std::string GpuStack::Report() const {
  std::string out;
  out += driver_ ? "driver: " + driver_->Describe() : "driver: " + driver_status_.message();
  out += "\n";
  out += compiler_ ? "kernel compiler: " + compiler_->Version() + " (" + compiler_path_ + ")"
                   : "kernel compiler: " + compiler_status_.message();
  out += "\n";
  out += nccl_ ? "nccl: " + nccl_->Describe() : "nccl: " + nccl_status_.message();
  out += "\n";
  return out;
}

}  // namespace cohort::gpu
