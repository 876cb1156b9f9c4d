// The GPU reduction kernels, generated as CUDA C++ source per (dtype, op)
// and compiled at first use (gpu/kernel_cache.h). One kernel computes, for
// every element i < count,
//
//   acc = first_prescaled ? src[0][i] : Scale(src[0][i], prescale)
//   for k in 1..nsrc-1:  acc = Op(acc, Scale(src[k][i], prescale))
//   if finish:           acc = Scale(Divide(acc, divisor), postscale)
//   dst[i] = acc
//
// with exactly the arithmetic of collectives/reduce_kernels.h, so a GPU
// reduction equals the CPU one bit for bit: integers wrap (sum, product),
// scale in double, truncate and saturate; float16/bfloat16 are computed in
// float32 and rounded back to nearest-even after every step (conversions
// written here with bit operations, identical to common/half.h: no
// cuda_fp16.h); bool is logical; a factor of exactly 1 (or a divisor of 1)
// leaves values untouched. Scale(x, f) is ScaleCopy, Divide FinishReduction's
// division, Op ReduceTwo. Average uses the sum kernel with divisor = ranks.
//
// The same body is valid host C++ (KernelTarget::kHost: macros stand in for
// __global__ and the thread indices, one "thread" walks every element), which
// the tests compile with the host compiler and check against the CPU kernels
// for every dtype x op.
#ifndef COHORT_GPU_REDUCE_KERNEL_SOURCE_H_
#define COHORT_GPU_REDUCE_KERNEL_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "cohort/types.h"

namespace cohort::gpu {

inline constexpr int kMaxReduceSources = 16;

// The kernel's one argument. The generated source declares the same layout
// (struct CohortReduceArgs); both sides check its size.
struct ReduceKernelArgs {
  uint64_t dst = 0;                      // device address of the output
  uint64_t src[kMaxReduceSources] = {};  // device addresses of the inputs (dst may be one)
  uint64_t count = 0;                    // elements
  double prescale = 1;
  double postscale = 1;
  int32_t nsrc = 0;             // 1..kMaxReduceSources
  int32_t first_prescaled = 0;  // src[0] is a partial result: already scaled
  int32_t divisor = 1;          // average: the rank count (applied when finish)
  int32_t finish = 0;           // apply divisor and postscale
};
static_assert(sizeof(ReduceKernelArgs) == 176, "the generated CohortReduceArgs has this size");

enum class KernelTarget { kDevice, kHost };

// The ops that have kernels: Average reduces with kSum's kernel; Adasum has
// none (it runs staged, on the CPU).
bool HasReduceKernel(ReduceOp op);
ReduceOp KernelOp(ReduceOp op);  // kAverage -> kSum

// "cohort_reduce_float32_sum".
std::string ReduceKernelName(DataType type, ReduceOp op);

// A complete translation unit with the one kernel for (type, KernelOp(op)).
std::string ReduceKernelSource(DataType type, ReduceOp op, KernelTarget target);

// Every dtype's kernels for every op in one translation unit (for the host
// build the tests link).
std::string AllReduceKernelsSource(KernelTarget target);

}  // namespace cohort::gpu

#endif  // COHORT_GPU_REDUCE_KERNEL_SOURCE_H_
