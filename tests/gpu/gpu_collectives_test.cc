// GpuCollectives and the NCCL transport in one process (a job of one rank)
// over the fake CUDA API and fake NCCL: the NCCL path applies cohort's
// prescale, average and postscale around NCCL's sum; calls NCCL cannot take
// fall back; an initialisation that never finishes times out, aborts NCCL
// and names the rank; shutting down destroys the NCCL communicator.
#include "gpu/transport/gpu_collectives.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "common/half.h"
#include "gpu/device_reduce.h"
#include "support/fake_cuda.h"
#include "support/fake_kernel_compiler.h"
#include "support/fake_nccl.h"

namespace cohort::gpu {
namespace {

std::unique_ptr<Communicator> OneRank(double timeout_seconds) {
  Mesh mesh;
  PeerInfo self;
  self.hostname = "here";
  self.host_key = "here";
  self.pid = getpid();
  mesh.peers = {self};
  mesh.links.resize(1);
  mesh.local_ranks = {0};
  mesh.hosts = {{0}};
  CommunicatorOptions options;
  options.timeout_seconds = timeout_seconds;
  return std::make_unique<Communicator>(std::move(mesh), nullptr, options);
}

class GpuCollectivesOneRank : public ::testing::Test {
 protected:
  std::unique_ptr<Communicator> comm_ = OneRank(5);
  testing::FakeCuda cuda_;
  testing::FakeKernelCompiler compiler_;
  testing::FakeNccl nccl_{cuda_, *comm_};

  std::unique_ptr<GpuCollectives> Create(GpuTransportSetting setting) {
    GpuStackOptions options;
    options.transport = setting;
    Result<std::unique_ptr<GpuCollectives>> gpu =
        GpuCollectives::Create(*comm_, GpuDeps{&cuda_, &compiler_, &nccl_, ""}, 0, options);
    EXPECT_TRUE(gpu.ok()) << gpu.status().ToString();
    return gpu.ok() ? std::move(*gpu) : nullptr;
  }
};

TEST_F(GpuCollectivesOneRank, NcclRunsCohortsScalingAroundItsSum) {
  std::unique_ptr<GpuCollectives> gpu = Create(GpuTransportSetting::kNccl);
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->transport(), GpuTransport::kNccl);
  EXPECT_EQ(gpu->Describe().rfind("nccl among 1 ranks on 1 host (fake NCCL), GPU fake0:0", 0), 0u)
      << gpu->Describe();
  DevicePtr buf = *cuda_.Alloc(4 * sizeof(int32_t));
  const int32_t in[4] = {7, -7, 100, 3};
  std::memcpy(AsPointer(buf), in, sizeof(in));
  // prescale 3, average over 1 rank, postscale 0.5: ints truncate toward zero.
  ASSERT_TRUE(gpu->Allreduce(buf, buf, 4, DataType::kInt32, ReduceOp::kAverage, 3.0, 0.5).ok());
  ASSERT_TRUE(gpu->Synchronize().ok());
  int32_t out[4];
  std::memcpy(out, AsPointer(buf), sizeof(out));
  EXPECT_EQ(out[0], 10);
  EXPECT_EQ(out[1], -10);
  EXPECT_EQ(out[2], 150);
  EXPECT_EQ(out[3], 4);
  EXPECT_EQ(nccl_.collectives(), 1);
  // int16 has no NCCL type: the same call runs without NCCL.
  EXPECT_EQ(gpu->TransportForReduction(DataType::kInt16, ReduceOp::kSum), GpuTransport::kIpc);
  ASSERT_TRUE(gpu->Allreduce(buf, buf, 2, DataType::kInt16, ReduceOp::kSum, 2.0, 1.0).ok());
  ASSERT_TRUE(gpu->Synchronize().ok());
  EXPECT_EQ(nccl_.collectives(), 1);
  EXPECT_EQ(gpu->TransportForReduction(DataType::kFloat32, ReduceOp::kAdasum),
            GpuTransport::kStaged);
  gpu.reset();
  EXPECT_EQ(nccl_.destroys(), 1);
  EXPECT_EQ(nccl_.aborts(), 0);
  EXPECT_TRUE(cuda_.Free(buf).ok());
  EXPECT_EQ(cuda_.counts().device_allocations, 0u);
  EXPECT_EQ(cuda_.counts().streams, 0u);
}

TEST_F(GpuCollectivesOneRank, NcclInitialisationThatNeverEndsTimesOutAndAborts) {
  comm_ = OneRank(0.3);
  testing::FakeNccl hanging(cuda_, *comm_);
  hanging.set_hang_init(true);
  GpuStackOptions options;
  options.transport = GpuTransportSetting::kNccl;
  Result<std::unique_ptr<GpuCollectives>> gpu =
      GpuCollectives::Create(*comm_, GpuDeps{&cuda_, &compiler_, &hanging, ""}, 0, options);
  ASSERT_FALSE(gpu.ok());
  EXPECT_EQ(gpu.status().message(),
            "NCCL: rank 0 (host here, pid " + std::to_string(getpid()) +
                ") could not join the communicator: joining the NCCL communicator: NCCL did not "
                "finish within 0.3 s (COHORT_TIMEOUT)");
  EXPECT_EQ(hanging.aborts(), 1);
}

TEST_F(GpuCollectivesOneRank, OneRankIsLocalWorkOnEveryTransport) {
  for (GpuTransportSetting setting :
       {GpuTransportSetting::kAuto, GpuTransportSetting::kIpc, GpuTransportSetting::kStaged}) {
    std::unique_ptr<GpuCollectives> gpu = Create(setting);
    ASSERT_NE(gpu, nullptr);
    DevicePtr send = *cuda_.Alloc(3 * sizeof(float));
    DevicePtr recv = *cuda_.Alloc(6 * sizeof(float));
    const float in[3] = {1.5f, -2.0f, 4.0f};
    std::memcpy(AsPointer(send), in, sizeof(in));
    ASSERT_TRUE(gpu->Allreduce(send, recv, 3, DataType::kFloat32, ReduceOp::kSum, 2.0, 0.25).ok());
    ASSERT_TRUE(gpu->Allgather(send, recv + 3 * sizeof(float), {3}, DataType::kFloat32).ok());
    ASSERT_TRUE(gpu->Broadcast(send, 3, DataType::kFloat32, 0).ok());
    ASSERT_TRUE(gpu->Synchronize().ok());
    float out[6];
    std::memcpy(out, AsPointer(recv), sizeof(out));
    EXPECT_EQ(out[0], 0.75f);
    EXPECT_EQ(out[1], -1.0f);
    EXPECT_EQ(out[2], 2.0f);
    EXPECT_EQ(out[3], 1.5f);
    EXPECT_EQ(out[5], 4.0f);
    EXPECT_TRUE(cuda_.Free(send).ok());
    EXPECT_TRUE(cuda_.Free(recv).ok());
  }
  // A bad argument breaks the communicator, as on the CPU path.
  std::unique_ptr<GpuCollectives> gpu = Create(GpuTransportSetting::kAuto);
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->Broadcast(0, 3, DataType::kFloat32, 1).message(),
            "broadcast: root 1 is not a rank of this job (size 1)");
  EXPECT_EQ(gpu->Synchronize().message(), "broadcast: root 1 is not a rank of this job (size 1)");
}

TEST_F(GpuCollectivesOneRank, Float16IsScaledByTheFactorInFloat16AsHorovodsGpuKernels) {
  // Horovod's test_torch.py (allreduce/reducescatter pre- and postscale on
  // CUDA float16) expects x * half(f), rounded once; 0.3 is not a float16.
  std::unique_ptr<GpuCollectives> gpu = Create(GpuTransportSetting::kIpc);
  ASSERT_NE(gpu, nullptr);
  const float values[4] = {12.0f, -99.0f, 57.0f, 3.0f};
  uint16_t in[4];
  for (int i = 0; i < 4; ++i) in[i] = FloatToFloat16(values[i]);
  DevicePtr buf = *cuda_.Alloc(sizeof(in));
  for (double pre : {0.3, 1.0}) {
    const double post = pre == 1.0 ? 0.3 : 1.0;
    std::memcpy(AsPointer(buf), in, sizeof(in));
    ASSERT_TRUE(gpu->Allreduce(buf, buf, 4, DataType::kFloat16, ReduceOp::kSum, pre, post).ok());
    ASSERT_TRUE(gpu->Synchronize().ok());
    uint16_t out[4];
    std::memcpy(out, AsPointer(buf), sizeof(out));
    const float factor = Float16ToFloat(FloatToFloat16(0.3f));
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(out[i], FloatToFloat16(values[i] * factor)) << values[i] << " prescale " << pre;
    }
  }
  // 12 * 0.3 in float32 rounds to another float16 than 12 * half(0.3): the
  // check above tells the two rules apart.
  EXPECT_NE(FloatToFloat16(12.0f * 0.3f), FloatToFloat16(12.0f * Float16ToFloat(FloatToFloat16(0.3f))));
  EXPECT_DOUBLE_EQ(DeviceScaleFactor(DataType::kFloat32, 0.3), 0.3);
  EXPECT_TRUE(cuda_.Free(buf).ok());
}

}  // namespace
}  // namespace cohort::gpu
