// FakeGpuProvider: fakes behind the engine's GpuProvider.
#include "support/fake_gpu_provider.h"

namespace cohort::gpu::testing {

FakeGpuProvider::FakeGpuProvider(FakeCudaOptions cuda, Communicator* nccl_comm,
                                 GpuStackOptions options)
    : cuda_(std::move(cuda)), options_(std::move(options)) {
  if (nccl_comm != nullptr) nccl_ = std::make_unique<FakeNccl>(cuda_, *nccl_comm);
}

Result<GpuDeps> FakeGpuProvider::Deps() {
  GpuDeps deps;
  deps.api = &cuda_;
  deps.compiler = &compiler_;
  deps.nccl = nccl_.get();
  deps.nccl_missing = nccl_ != nullptr ? "" : "NCCL not found (fake CUDA without NCCL)";
  return deps;
}

std::string FakeGpuProvider::Report() {
  return cuda_.Describe() + "\n" + (nccl_ != nullptr ? "fake NCCL" : "NCCL not found");
}

}  // namespace cohort::gpu::testing
