// PowerSGD's three passes over one float32 gradient matrix (Vogels et al.,
// 2019; python/cohort/torch/powersgd.py drives them). Written as passes that
// each stream the matrix once, because a power iteration on a gradient is
// bound by memory traffic, not arithmetic: torch's own operators take six to
// eight passes and a temporary the size of the matrix for the same step.
//
// The matrix M is `rows` x `cols`, row-major; the rank r is small (1-8), so
// a row of Q transposed (r x cols, row-major, "q_t") and the scratch row stay
// in cache while M streams. P is rows x r, row-major. The projection's sums
// over a row are taken in float32 in 16 independent lanes, the
// back-projection's over rows one after another: a different order than a
// BLAS call's, so results agree with torch's to float rounding, not bit for
// bit.
//
// The loops are compiled twice (generic x86-64 and AVX2) and the variant is
// picked once per process from the CPU's features, as the reduction kernels.
#ifndef COHORT_COMPRESSION_POWERSGD_KERNELS_H_
#define COHORT_COMPRESSION_POWERSGD_KERNELS_H_

#include "cohort/types.h"

namespace cohort::powersgd {

// M += error (when given), then p = M q: p[i][k] = sum_j M[i][j] q_t[k][j].
void FoldAndProject(const PowerSgdMatrix& x, const float* q_t, float* p);

// q_t = (M^T p)^T: q_t[k][j] = sum_i p[i][k] M[i][j]. M is only read.
void ProjectBack(const PowerSgdMatrix& x, const float* p, float* q_t);

// A = p q_t (the rank-r approximation); error = M - A (when given); M = A.
void Approximate(const PowerSgdMatrix& x, const float* p, const float* q_t);

// The two compiled variants, for the dispatch above and for tests that
// compare them.
namespace generic {
void FoldAndProject(const PowerSgdMatrix& x, const float* q_t, float* p);
void ProjectBack(const PowerSgdMatrix& x, const float* p, float* q_t);
void Approximate(const PowerSgdMatrix& x, const float* p, const float* q_t);
}  // namespace generic
namespace avx2 {
void FoldAndProject(const PowerSgdMatrix& x, const float* q_t, float* p);
void ProjectBack(const PowerSgdMatrix& x, const float* p, float* q_t);
void Approximate(const PowerSgdMatrix& x, const float* p, const float* q_t);
}  // namespace avx2

}  // namespace cohort::powersgd

#endif  // COHORT_COMPRESSION_POWERSGD_KERNELS_H_
