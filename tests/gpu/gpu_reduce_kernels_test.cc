// The generated reduction kernels (gpu/reduce_kernel_source.h), built for
// the host at build time, against the CPU kernels they mirror
// (collectives/reduce_kernels.h): bit for bit, for every dtype x op, with
// and without pre/post scale and the average's division, 1 to 33 inputs (so
// DeviceReducer's rounds of 16), on random bit patterns (NaN, infinities,
// subnormals, wrapping integers, non-canonical bools). They run through the
// whole launch path: KernelCache, DeviceReducer, the fake CUDA API.
// One latitude: a NaN result may be another NaN. Which input's payload and
// sign an addition of two NaNs keeps depends on the operand order the
// compiler picks (IEEE leaves it open; the CPU kernels' own generic and AVX2
// builds may differ too), and a GPU returns its canonical NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "collectives/reduce_kernels.h"
#include "common/value_convert.h"
#include "gpu/device_reduce.h"
#include "gpu/kernel_cache.h"
#include "gpu/reduce_kernel_source.h"
#include "support/fake_cuda.h"
#include "support/fake_kernel_compiler.h"
#include "support/host_kernels.h"

namespace cohort::gpu {
namespace {

using Bytes = std::vector<unsigned char>;

// The first element where `got` and `want` differ (a NaN equals any NaN),
// or -1.
long FirstDifference(const Bytes& got, const Bytes& want, DataType type) {
  const size_t es = DataTypeSize(type);
  for (size_t i = 0; i * es < want.size(); ++i) {
    if (std::memcmp(&got[i * es], &want[i * es], es) == 0) continue;
    if (IsFloatingPoint(type) && std::isnan(LoadAs(type, &got[i * es])) &&
        std::isnan(LoadAs(type, &want[i * es]))) {
      continue;
    }
    return static_cast<long>(i);
  }
  return -1;
}

Bytes Random(size_t bytes, std::mt19937_64& rng) {
  Bytes b(bytes);
  for (auto& x : b) x = static_cast<unsigned char>(rng());
  return b;
}

// The CPU path's sequence of calls for one reduction (what shm_allreduce.cc
// does for a slice): scale each input, reduce in order, finish; with the
// scale factors the device uses (DeviceScaleFactor: float16 by a float16
// factor), the one place the GPU path differs from the host's on purpose.
Bytes CpuReference(const std::vector<Bytes>& inputs, size_t count, ReduceSpec spec) {
  spec.prescale = DeviceScaleFactor(spec.type, spec.prescale);
  spec.postscale = DeviceScaleFactor(spec.type, spec.postscale);
  const size_t es = DataTypeSize(spec.type);
  Bytes acc(count * es), tmp(count * es);
  if (spec.first_prescaled) {
    std::memcpy(acc.data(), inputs[0].data(), count * es);
  } else {
    ScaleCopy(acc.data(), inputs[0].data(), count, spec.type, spec.prescale);
  }
  for (size_t k = 1; k < inputs.size(); ++k) {
    ScaleCopy(tmp.data(), inputs[k].data(), count, spec.type, spec.prescale);
    ReduceTwo(acc.data(), acc.data(), tmp.data(), count, spec.type, spec.op);
  }
  if (spec.finish)
    FinishReduction(acc.data(), count, spec.type, spec.op, spec.ranks, spec.postscale);
  return acc;
}

class GpuReduceKernels : public ::testing::Test {
 protected:
  testing::FakeCuda cuda_;
  testing::FakeKernelCompiler compiler_;
  KernelCache cache_{cuda_, compiler_, ""};
  DeviceReducer reducer_{cuda_, cache_, *cuda_.GetDeviceInfo(0)};

  // Runs the kernel on fake device copies of `inputs`; returns the output.
  Bytes Device(const std::vector<Bytes>& inputs, size_t count, const ReduceSpec& spec,
               bool in_place) {
    const size_t es = DataTypeSize(spec.type);
    std::vector<DevicePtr> srcs;
    for (const Bytes& in : inputs) {
      DevicePtr p = *cuda_.Alloc(count * es);
      std::memcpy(AsPointer(p), in.data(), count * es);
      srcs.push_back(p);
    }
    const DevicePtr out = in_place ? srcs[0] : *cuda_.Alloc(count * es);
    EXPECT_TRUE(reducer_.Reduce(out, srcs, count, spec, nullptr).ok());
    EXPECT_TRUE(cuda_.Flush(nullptr).ok());
    Bytes result(static_cast<unsigned char*>(AsPointer(out)),
                 static_cast<unsigned char*>(AsPointer(out)) + count * es);
    for (DevicePtr p : srcs) EXPECT_TRUE(cuda_.Free(p).ok());
    if (!in_place) {
      EXPECT_TRUE(cuda_.Free(out).ok());
    }
    return result;
  }
};

TEST_F(GpuReduceKernels, EveryDtypeAndOpEqualsTheCpuKernelsBitForBit) {
  std::mt19937_64 rng(42);
  const size_t count = 257;
  int checked = 0;
  for (int t = 0; t < kNumDataTypes; ++t) {
    const DataType type = static_cast<DataType>(t);
    for (ReduceOp op :
         {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      for (int n : {1, 2, 3, 17, 33}) {
        for (auto [pre, post] : {std::pair{1.0, 1.0}, {0.5, 3.0}, {-1.25, 0.1}, {0.0, 1e30}}) {
          for (bool first_prescaled : {false, true}) {
            ReduceSpec spec;
            spec.type = type;
            spec.op = op;
            spec.prescale = pre;
            spec.postscale = post;
            spec.first_prescaled = first_prescaled;
            spec.finish = true;
            spec.ranks = 3;
            std::vector<Bytes> inputs;
            for (int k = 0; k < n; ++k) inputs.push_back(Random(count * DataTypeSize(type), rng));
            const Bytes want = CpuReference(inputs, count, spec);
            const bool in_place = (n + t) % 2 == 0;
            const Bytes got = Device(inputs, count, spec, in_place);
            const long at = FirstDifference(got, want, type);
            ASSERT_EQ(at, -1) << "element " << at << ": "
                              << LoadAs(type, &got[at * DataTypeSize(type)]) << " instead of "
                              << LoadAs(type, &want[at * DataTypeSize(type)]) << "; "
                              << DataTypeName(type) << " " << ReduceOpName(op) << " with " << n
                              << " inputs, prescale " << pre << ", postscale " << post
                              << (first_prescaled ? ", first prescaled" : "")
                              << (in_place ? ", in place" : "");
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, kNumDataTypes * 5 * 5 * 4 * 2);
  // One compilation per dtype x kernel op (the average shares the sum's).
  EXPECT_EQ(compiler_.compiled(), kNumDataTypes * 4);
}

TEST_F(GpuReduceKernels, WithoutFinishOnlyPrescaleAndOpApply) {
  std::mt19937_64 rng(7);
  ReduceSpec spec;
  spec.type = DataType::kInt32;
  spec.op = ReduceOp::kAverage;
  spec.prescale = 2;
  spec.postscale = 100;  // not applied without finish
  spec.ranks = 4;
  const std::vector<Bytes> inputs = {Random(64 * 4, rng), Random(64 * 4, rng)};
  EXPECT_EQ(Device(inputs, 64, spec, false), CpuReference(inputs, 64, spec));
}

TEST(GpuReduceKernelSource, NamesAndShape) {
  EXPECT_EQ(ReduceKernelName(DataType::kFloat32, ReduceOp::kSum), "cohort_reduce_float32_sum");
  EXPECT_EQ(ReduceKernelName(DataType::kBFloat16, ReduceOp::kAverage),
            "cohort_reduce_bfloat16_sum");
  EXPECT_EQ(ReduceKernelName(DataType::kBool, ReduceOp::kProduct), "cohort_reduce_bool_product");
  EXPECT_FALSE(HasReduceKernel(ReduceOp::kAdasum));
  const std::string device =
      ReduceKernelSource(DataType::kFloat16, ReduceOp::kMax, KernelTarget::kDevice);
  // One kernel per source, deterministic (its hash is the disk cache's key),
  // no header of CUDA's (NVRTC finds none on a machine with only the wheels).
  EXPECT_EQ(device, ReduceKernelSource(DataType::kFloat16, ReduceOp::kMax, KernelTarget::kDevice));
  EXPECT_NE(device.find("extern \"C\" __global__"), std::string::npos);
  EXPECT_NE(device.find("void cohort_reduce_float16_max(CohortReduceArgs a)"), std::string::npos);
  EXPECT_EQ(device.find("#include"), std::string::npos);
  EXPECT_EQ(device.find("cohort_reduce_float16_sum"), std::string::npos);
  const std::string host =
      ReduceKernelSource(DataType::kFloat16, ReduceOp::kMax, KernelTarget::kHost);
  EXPECT_EQ(host.find("__global__"), std::string::npos);
  // Every kernel has a host build in the tests' table.
  EXPECT_EQ(testing::kHostReduceKernelCount, static_cast<size_t>(kNumDataTypes * 4));
  for (int t = 0; t < kNumDataTypes; ++t) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      EXPECT_NE(testing::FindHostKernel(ReduceKernelName(static_cast<DataType>(t), op)), nullptr);
    }
  }
}

}  // namespace
}  // namespace cohort::gpu
