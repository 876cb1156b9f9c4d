// The default GpuProvider: gpu::GpuStack, loaded at first use.
#include "engine/gpu_provider.h"

#include <mutex>

namespace cohort {
namespace {

class LoadingProvider : public GpuProvider {
 public:
  explicit LoadingProvider(gpu::GpuStackOptions options) : options_(std::move(options)) {}

  Result<gpu::GpuDeps> Deps() override {
    gpu::GpuStack& stack = Stack();
    Result<gpu::CudaApi*> driver = stack.driver();
    if (!driver.ok()) return driver.status();
    Result<gpu::KernelCompiler*> compiler = stack.compiler();
    if (!compiler.ok()) return compiler.status();
    Result<gpu::NcclApi*> nccl = stack.nccl();
    gpu::GpuDeps deps;
    deps.api = *driver;
    deps.compiler = *compiler;
    deps.nccl = nccl.ok() ? *nccl : nullptr;
    deps.nccl_missing = nccl.ok() ? "" : nccl.status().message();
    return deps;
  }
  const gpu::GpuStackOptions& options() const override { return options_; }
  std::string Report() override { return Stack().Report(); }
  int NcclVersion() override {
    Result<gpu::NcclApi*> nccl = Stack().nccl();
    return nccl.ok() ? (*nccl)->Version() : 0;
  }

 private:
  gpu::GpuStack& Stack() {
    std::call_once(once_, [this] { stack_ = gpu::GpuStack::Load(options_); });
    return *stack_;
  }

  const gpu::GpuStackOptions options_;
  std::once_flag once_;
  std::unique_ptr<gpu::GpuStack> stack_;  // set once, under once_
};

}  // namespace

std::unique_ptr<GpuProvider> LoadingGpuProvider(gpu::GpuStackOptions options) {
  return std::make_unique<LoadingProvider>(std::move(options));
}

}  // namespace cohort
