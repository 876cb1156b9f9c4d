// CUDA C++ to cubin/PTX with NVRTC (nvrtc_compiler.h).
#include "gpu/nvrtc_compiler.h"

#include <vector>

namespace cohort::gpu {

using namespace abi;  // NOLINT: NVRTC's own names read best unqualified here

Result<std::unique_ptr<NvrtcCompiler>> NvrtcCompiler::Create(
    std::unique_ptr<SharedLibrary> library) {
  std::unique_ptr<NvrtcCompiler> c(new NvrtcCompiler(std::move(library)));
  NvrtcFunctions& f = c->fn_;
  COHORT_RETURN_IF_ERROR(c->library_->Bind({
      {"nvrtcVersion", Slot(&f.nvrtcVersion)},
      {"nvrtcGetErrorString", Slot(&f.nvrtcGetErrorString)},
      {"nvrtcCreateProgram", Slot(&f.nvrtcCreateProgram)},
      {"nvrtcDestroyProgram", Slot(&f.nvrtcDestroyProgram)},
      {"nvrtcCompileProgram", Slot(&f.nvrtcCompileProgram)},
      {"nvrtcGetProgramLogSize", Slot(&f.nvrtcGetProgramLogSize)},
      {"nvrtcGetProgramLog", Slot(&f.nvrtcGetProgramLog)},
      {"nvrtcGetPTXSize", Slot(&f.nvrtcGetPTXSize)},
      {"nvrtcGetPTX", Slot(&f.nvrtcGetPTX)},
      {"nvrtcGetCUBINSize", Slot(&f.nvrtcGetCUBINSize), false},
      {"nvrtcGetCUBIN", Slot(&f.nvrtcGetCUBIN), false},
      {"nvrtcGetNumSupportedArchs", Slot(&f.nvrtcGetNumSupportedArchs), false},
      {"nvrtcGetSupportedArchs", Slot(&f.nvrtcGetSupportedArchs), false},
  }));
  if (f.nvrtcVersion(&c->major_, &c->minor_) != NVRTC_SUCCESS) {
    return Status::NotInitialized("NVRTC at " + c->path() + ": nvrtcVersion failed");
  }
  return c;
}

std::string NvrtcCompiler::Version() const {
  return "NVRTC " + std::to_string(major_) + "." + std::to_string(minor_);
}

int NvrtcCompiler::NewestSupportedArch(int cc) const {
  int count = 0;
  if (fn_.nvrtcGetNumSupportedArchs == nullptr || fn_.nvrtcGetSupportedArchs == nullptr ||
      fn_.nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0) {
    return 0;
  }
  std::vector<int> archs(count);
  if (fn_.nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return 0;
  int best = 0;
  for (int a : archs) {
    if (a <= cc && a > best) best = a;
  }
  return best;
}

Result<std::string> NvrtcCompiler::CompileFor(const std::string& source, const std::string& name,
                                              const std::string& arch, bool cubin) {
  nvrtcProgram prog = nullptr;
  nvrtcResult r =
      fn_.nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) {
    return Status::Internal("nvrtcCreateProgram(" + name +
                            ") failed: " + fn_.nvrtcGetErrorString(r));
  }
  // IEEE arithmetic as on the CPU: no fused multiply-add, exact division and
  // square root, denormals kept (the reduction kernels must equal
  // collectives/reduce_kernels.h bit for bit).
  const std::string arch_option = "--gpu-architecture=" + arch;
  const char* options[] = {arch_option.c_str(), "--fmad=false", "--prec-div=true",
                           "--prec-sqrt=true", "--ftz=false"};
  r = fn_.nvrtcCompileProgram(prog, 5, options);
  Result<std::string> out = Status::Internal("unreachable");
  if (r != NVRTC_SUCCESS) {
    size_t log_size = 0;
    std::string log;
    if (fn_.nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
      log.resize(log_size);
      fn_.nvrtcGetProgramLog(prog, log.data());
      log.resize(log_size - 1);
    }
    out = Status::InvalidArgument("NVRTC " + std::to_string(major_) + "." + std::to_string(minor_) +
                                  " could not compile " + name + " for " + arch + ": " +
                                  fn_.nvrtcGetErrorString(r) + (log.empty() ? "" : "\n" + log));
  } else {
    size_t size = 0;
    std::string image;
    r = cubin ? fn_.nvrtcGetCUBINSize(prog, &size) : fn_.nvrtcGetPTXSize(prog, &size);
    if (r == NVRTC_SUCCESS) {
      image.resize(size);
      r = cubin ? fn_.nvrtcGetCUBIN(prog, image.data()) : fn_.nvrtcGetPTX(prog, image.data());
    }
    if (r != NVRTC_SUCCESS) {
      out = Status::Internal(std::string("reading NVRTC's output for ") + name +
                             " failed: " + fn_.nvrtcGetErrorString(r));
    } else {
      out = std::move(image);
    }
  }
  fn_.nvrtcDestroyProgram(&prog);
  return out;
}

Result<std::string> NvrtcCompiler::Compile(const std::string& source, const std::string& name,
                                           int cc_major, int cc_minor) {
  const int cc = cc_major * 10 + cc_minor;
  if (fn_.nvrtcGetCUBIN != nullptr) {
    const int newest = NewestSupportedArch(cc);
    if (newest == 0 || newest == cc) {
      return CompileFor(source, name, "sm_" + std::to_string(cc), /*cubin=*/true);
    }
  }
  // An NVRTC older than the device: PTX for the newest architecture it
  // knows, which the driver compiles for the device at load.
  const int newest = NewestSupportedArch(cc);
  return CompileFor(source, name, "compute_" + std::to_string(newest != 0 ? newest : cc),
                    /*cubin=*/false);
}

}  // namespace cohort::gpu
