// The generic PowerSGD kernels and the dispatch between them and the AVX2 copy.
#define COHORT_KERNEL_NAMESPACE generic
#include "compression/powersgd_kernels_impl.h"

#include "common/cpu_features.h"

namespace cohort::powersgd {

void FoldAndProject(const PowerSgdMatrix& x, const float* q_t, float* p) {
  if (CpuHasAvx2()) {
    avx2::FoldAndProject(x, q_t, p);
  } else {
    generic::FoldAndProject(x, q_t, p);
  }
}

void ProjectBack(const PowerSgdMatrix& x, const float* p, float* q_t) {
  if (CpuHasAvx2()) {
    avx2::ProjectBack(x, p, q_t);
  } else {
    generic::ProjectBack(x, p, q_t);
  }
}

void Approximate(const PowerSgdMatrix& x, const float* p, const float* q_t) {
  if (CpuHasAvx2()) {
    avx2::Approximate(x, p, q_t);
  } else {
    generic::Approximate(x, p, q_t);
  }
}

}  // namespace cohort::powersgd
