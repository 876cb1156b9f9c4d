// The loops of powersgd_kernels.h, shared by the generic and the AVX2
// translation units (powersgd_kernels.cc, powersgd_kernels_avx2.cc). Included
// only there; each includer defines COHORT_KERNEL_NAMESPACE so the two
// copies do not collide.
#ifndef COHORT_KERNEL_NAMESPACE
#error "define COHORT_KERNEL_NAMESPACE before including powersgd_kernels_impl.h"
#endif

#include <cstring>

#include "compression/powersgd_kernels.h"

namespace cohort::powersgd::COHORT_KERNEL_NAMESPACE {
namespace {

// Independent partial sums: without them a float sum is one dependency
// chain and the compiler may not reorder it into vector lanes.
constexpr size_t kLanes = 16;

// Columns of the approximation built at a time on the stack (1 KiB: in L1).
// No std container here: its inline copies would be compiled in both
// variants and the linker may keep the AVX2 one for the generic caller.
constexpr size_t kTile = 256;

float Dot(const float* a, const float* b, size_t n) {
  float lane[kLanes] = {};
  size_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) lane[l] += a[j + l] * b[j + l];
  }
  float sum = 0.0f;
  for (; j < n; ++j) sum += a[j] * b[j];
  for (size_t l = 0; l < kLanes; ++l) sum += lane[l];
  return sum;
}

// out[j] += c * row[j]
void AddScaled(float* out, float c, const float* row, size_t n) {
  for (size_t j = 0; j < n; ++j) out[j] += c * row[j];
}

}  // namespace

void FoldAndProject(const PowerSgdMatrix& x, const float* q_t, float* p) {
  for (size_t i = 0; i < x.rows; ++i) {
    float* row = x.m + i * x.cols;
    if (x.error != nullptr) {
      const float* e = x.error + i * x.cols;
      for (size_t j = 0; j < x.cols; ++j) row[j] += e[j];
    }
    // The row was just written: the r dot products read it from cache.
    for (size_t k = 0; k < x.rank; ++k) p[i * x.rank + k] = Dot(row, q_t + k * x.cols, x.cols);
  }
}

void ProjectBack(const PowerSgdMatrix& x, const float* p, float* q_t) {
  std::memset(q_t, 0, sizeof(float) * x.rank * x.cols);
  for (size_t i = 0; i < x.rows; ++i) {
    const float* row = x.m + i * x.cols;
    for (size_t k = 0; k < x.rank; ++k) AddScaled(q_t + k * x.cols, p[i * x.rank + k], row, x.cols);
  }
}

void Approximate(const PowerSgdMatrix& x, const float* p, const float* q_t) {
  float a[kTile];
  for (size_t i = 0; i < x.rows; ++i) {
    const float* pi = p + i * x.rank;
    float* row = x.m + i * x.cols;
    float* e = x.error == nullptr ? nullptr : x.error + i * x.cols;
    for (size_t j0 = 0; j0 < x.cols; j0 += kTile) {
      const size_t n = x.cols - j0 < kTile ? x.cols - j0 : kTile;
      for (size_t j = 0; j < n; ++j) a[j] = pi[0] * q_t[j0 + j];
      for (size_t k = 1; k < x.rank; ++k) AddScaled(a, pi[k], q_t + k * x.cols + j0, n);
      if (e != nullptr) {
        for (size_t j = 0; j < n; ++j) e[j0 + j] = row[j0 + j] - a[j];
      }
      std::memcpy(row + j0, a, sizeof(float) * n);
    }
  }
}

}  // namespace cohort::powersgd::COHORT_KERNEL_NAMESPACE
