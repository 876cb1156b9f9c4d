// The loops of powersgd_kernels.h, shared by the generic and the AVX2
// translation units (powersgd_kernels.cc, powersgd_kernels_avx2.cc). Included
// only there; each includer defines COHORT_KERNEL_NAMESPACE so the two
// copies do not collide.
#ifndef COHORT_KERNEL_NAMESPACE
#error "define COHORT_KERNEL_NAMESPACE before including powersgd_kernels_impl.h"
#endif

#include <cstring>
#include <vector>

#include "compression/powersgd_kernels.h"

namespace cohort::powersgd::COHORT_KERNEL_NAMESPACE {
namespace {

// Independent partial sums: without them a float sum is one dependency
// chain and the compiler may not reorder it into vector lanes.
constexpr size_t kLanes = 16;

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
  std::vector<float> a(x.cols);
  for (size_t i = 0; i < x.rows; ++i) {
    const float* pi = p + i * x.rank;
    for (size_t j = 0; j < x.cols; ++j) a[j] = pi[0] * q_t[j];
    for (size_t k = 1; k < x.rank; ++k) AddScaled(a.data(), pi[k], q_t + k * x.cols, x.cols);
    float* row = x.m + i * x.cols;
    if (x.error != nullptr) {
      float* e = x.error + i * x.cols;
      for (size_t j = 0; j < x.cols; ++j) e[j] = row[j] - a[j];
    }
    std::memcpy(row, a.data(), sizeof(float) * x.cols);
  }
}

}  // namespace cohort::powersgd::COHORT_KERNEL_NAMESPACE
