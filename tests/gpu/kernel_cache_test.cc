// gpu/kernel_cache.h with the fake compiler and CUDA API: compile once per
// device and kernel, reuse from disk across processes, never reuse an entry
// made by another compiler version or for another architecture, replace a
// damaged entry, keep nothing on disk when told so.
#include "gpu/kernel_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "gpu/reduce_kernel_source.h"
#include "support/fake_cuda.h"
#include "support/fake_kernel_compiler.h"

namespace cohort::gpu {
namespace {

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/cohort-kernel-cache-XXXXXX";
    path_ = mkdtemp(name);
  }
  ~TempDir() {
    const std::string rm = "rm -rf " + path_;
    EXPECT_EQ(std::system(rm.c_str()), 0);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class GpuKernelCache : public ::testing::Test {
 protected:
  testing::FakeCuda cuda_;
  testing::FakeKernelCompiler compiler_;
  DeviceInfo device_ = *cuda_.GetDeviceInfo(0);
  TempDir dir_;
};

TEST_F(GpuKernelCache, CompilesOncePerKernelAndReusesIt) {
  KernelCache cache(cuda_, compiler_, "");
  Result<FunctionHandle> sum = cache.Reduce(DataType::kFloat32, ReduceOp::kSum, device_);
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_EQ(*cache.Reduce(DataType::kFloat32, ReduceOp::kSum, device_), *sum);
  EXPECT_EQ(*cache.Reduce(DataType::kFloat32, ReduceOp::kAverage, device_), *sum);
  EXPECT_TRUE(cache.Reduce(DataType::kFloat32, ReduceOp::kMax, device_).ok());
  EXPECT_EQ(cache.counts().compiled, 2);
  EXPECT_EQ(compiler_.compiled(), 2);
  EXPECT_EQ(cache.Reduce(DataType::kFloat32, ReduceOp::kAdasum, device_).status().message(),
            "no GPU kernel reduces with adasum");
}

TEST_F(GpuKernelCache, ALaterProcessLoadsFromDisk) {
  {
    KernelCache first(cuda_, compiler_, dir_.path() + "/nested/kernels");
    ASSERT_TRUE(first.Reduce(DataType::kInt8, ReduceOp::kProduct, device_).ok());
    EXPECT_EQ(first.counts().compiled, 1);
  }
  testing::FakeKernelCompiler later_compiler;
  KernelCache later(cuda_, later_compiler, dir_.path() + "/nested/kernels");
  ASSERT_TRUE(later.Reduce(DataType::kInt8, ReduceOp::kProduct, device_).ok());
  EXPECT_EQ(later.counts().compiled, 0);
  EXPECT_EQ(later.counts().disk_hits, 1);
  EXPECT_EQ(later_compiler.compiled(), 0);
}

TEST_F(GpuKernelCache, KeyHasSourceArchitectureAndCompilerVersion) {
  KernelCache cache(cuda_, compiler_, dir_.path());
  const std::string source =
      ReduceKernelSource(DataType::kInt8, ReduceOp::kSum, KernelTarget::kDevice);
  const std::string path = cache.DiskPath(source, "sm_90");
  EXPECT_EQ(path.rfind(dir_.path() + "/", 0), 0u);
  EXPECT_EQ(path.size(), dir_.path().size() + 1 + 64 + 4);  // SHA-256 hex + ".bin"
  EXPECT_NE(cache.DiskPath(source, "sm_80"), path);
  EXPECT_NE(cache.DiskPath(source + " ", "sm_90"), path);
  testing::FakeKernelCompiler newer("fake-compiler 2");
  EXPECT_NE(KernelCache(cuda_, newer, dir_.path()).DiskPath(source, "sm_90"), path);

  // A newer compiler compiles afresh even with the older one's entries there.
  ASSERT_TRUE(cache.Reduce(DataType::kInt8, ReduceOp::kSum, device_).ok());
  KernelCache with_newer(cuda_, newer, dir_.path());
  ASSERT_TRUE(with_newer.Reduce(DataType::kInt8, ReduceOp::kSum, device_).ok());
  EXPECT_EQ(with_newer.counts().compiled, 1);
  EXPECT_EQ(with_newer.counts().disk_hits, 0);
}

TEST_F(GpuKernelCache, DamagedEntryIsCompiledAgainAndReplaced) {
  KernelCache probe(cuda_, compiler_, dir_.path());
  const std::string path = probe.DiskPath(
      ReduceKernelSource(DataType::kFloat64, ReduceOp::kMin, KernelTarget::kDevice), "sm_90");
  std::ofstream(path) << "not a module";
  KernelCache cache(cuda_, compiler_, dir_.path());
  ASSERT_TRUE(cache.Reduce(DataType::kFloat64, ReduceOp::kMin, device_).ok());
  EXPECT_EQ(cache.counts().compiled, 1);
  EXPECT_EQ(Read(path), "fake-module:cohort_reduce_float64_min");
}

TEST_F(GpuKernelCache, MemoryOnlyWritesNothing) {
  KernelCache cache(cuda_, compiler_, "");
  ASSERT_TRUE(cache.Reduce(DataType::kBool, ReduceOp::kMin, device_).ok());
  EXPECT_EQ(std::system(("test -z \"$(ls -A " + dir_.path() + ")\"").c_str()), 0);
}

TEST_F(GpuKernelCache, CompileErrorsReachTheCaller) {
  compiler_.set_fail(true);
  KernelCache cache(cuda_, compiler_, dir_.path());
  EXPECT_EQ(cache.Reduce(DataType::kInt32, ReduceOp::kSum, device_).status().message(),
            "fake compiler: told to fail on cohort_reduce_int32_sum");
}

}  // namespace
}  // namespace cohort::gpu
