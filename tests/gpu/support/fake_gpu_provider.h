// FakeGpuProvider: the engine's GpuProvider over the fake CUDA API, fake
// kernel compiler and (optionally) fake NCCL of this folder, for tests of
// GPU tensors through the engine and the C API on machines without a GPU.
#ifndef COHORT_TESTS_GPU_SUPPORT_FAKE_GPU_PROVIDER_H_
#define COHORT_TESTS_GPU_SUPPORT_FAKE_GPU_PROVIDER_H_

#include <memory>
#include <string>

#include "engine/gpu_provider.h"
#include "support/fake_cuda.h"
#include "support/fake_kernel_compiler.h"
#include "support/fake_nccl.h"

namespace cohort::gpu::testing {

class FakeGpuProvider : public GpuProvider {
 public:
  // `nccl_comm`: NCCL's fake runs its collectives over it (the job's
  // communicator); null: NCCL is missing.
  FakeGpuProvider(FakeCudaOptions cuda, Communicator* nccl_comm, GpuStackOptions options);

  Result<GpuDeps> Deps() override;
  const GpuStackOptions& options() const override { return options_; }
  std::string Report() override;
  int NcclVersion() override { return nccl_ != nullptr ? nccl_->Version() : 0; }

  FakeCuda& cuda() { return cuda_; }

 private:
  FakeCuda cuda_;
  FakeKernelCompiler compiler_;
  std::unique_ptr<FakeNccl> nccl_;
  GpuStackOptions options_;
};

}  // namespace cohort::gpu::testing

#endif  // COHORT_TESTS_GPU_SUPPORT_FAKE_GPU_PROVIDER_H_
