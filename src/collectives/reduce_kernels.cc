// Generic reduction kernels and the dispatch between them and the AVX2 copy.
#define COHORT_KERNEL_NAMESPACE generic
#include "collectives/reduce_kernels_impl.h"

#include "collectives/reduce_kernels.h"
#include "common/cpu_features.h"

namespace cohort {
namespace avx2 {
void ReduceTwo(void* dst, const void* a, const void* b, size_t count, DataType type, ReduceOp op);
void Scale(void* dst, const void* src, size_t count, DataType type, double factor);
void Divide(void* buf, size_t count, DataType type, int divisor);
void ToHalf(void* dst, DataType dst_type, const float* src, size_t n);
void FromHalf(float* dst, const void* src, DataType src_type, size_t n);
}  // namespace avx2

void ReduceTwo(void* dst, const void* a, const void* b, size_t count, DataType type, ReduceOp op) {
  if (count == 0) return;
  if (CpuHasAvx2()) {
    avx2::ReduceTwo(dst, a, b, count, type, op);
  } else {
    generic::ReduceTwo(dst, a, b, count, type, op);
  }
}

void ScaleCopy(void* dst, const void* src, size_t count, DataType type, double factor) {
  if (count == 0) return;
  if (factor == 1.0) {
    if (dst != src) std::memmove(dst, src, count * DataTypeSize(type));
    return;
  }
  if (CpuHasAvx2()) {
    avx2::Scale(dst, src, count, type, factor);
  } else {
    generic::Scale(dst, src, count, type, factor);
  }
}

void FinishReduction(void* buf, size_t count, DataType type, ReduceOp op, int nranks,
                     double postscale) {
  if (count == 0) return;
  if (op == ReduceOp::kAverage && nranks != 1) {
    if (CpuHasAvx2()) {
      avx2::Divide(buf, count, type, nranks);
    } else {
      generic::Divide(buf, count, type, nranks);
    }
  }
  ScaleCopy(buf, buf, count, type, postscale);
}

void ConvertFloat32To16(void* dst, DataType dst_type, const float* src, size_t count) {
  if (CpuHasAvx2()) {
    avx2::ToHalf(dst, dst_type, src, count);
  } else {
    generic::ToHalf(dst, dst_type, src, count);
  }
}

void Convert16ToFloat32(float* dst, const void* src, DataType src_type, size_t count) {
  if (CpuHasAvx2()) {
    avx2::FromHalf(dst, src, src_type, count);
  } else {
    generic::FromHalf(dst, src, src_type, count);
  }
}

}  // namespace cohort
