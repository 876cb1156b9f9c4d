// Tests of PowerSGD's passes (compression/powersgd_kernels.h, cohort.h's
// PowerSgdProject...): each against a double-precision reference on shapes
// that do and do not fill the kernels' 16 lanes, ranks 1 to 5, with and
// without error feedback; the generic and AVX2 variants against each other;
// the public entry points' argument checks.
#include "compression/powersgd_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cohort/cohort.h"
#include "common/cpu_features.h"

namespace cohort {
namespace {

struct Shape {
  size_t rows, cols, rank;
};
const Shape kShapes[] = {{1, 1, 1},  {3, 17, 2}, {16, 16, 1}, {33, 100, 4},
                         {64, 7, 5}, {5, 48, 3}, {4, 3, 5},   {2, 600, 2}};

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// Each element within `tolerance` of the reference (float32 rounding of the sums).
void ExpectNear(const std::vector<float>& got, const std::vector<double>& want, double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tolerance) << "element " << i;
  }
}

// The three passes, in double, written as the formulas.
struct Reference {
  std::vector<double> m, p, q_t, approx;
};

Reference Compute(const Shape& s, const std::vector<float>& m, const std::vector<float>* error,
                  const std::vector<float>& q_t, const std::vector<float>& p_avg) {
  Reference r;
  r.m.assign(m.begin(), m.end());
  if (error != nullptr) {
    for (size_t i = 0; i < r.m.size(); ++i) r.m[i] += (*error)[i];
  }
  r.p.assign(s.rows * s.rank, 0.0);
  r.q_t.assign(s.rank * s.cols, 0.0);
  r.approx.assign(s.rows * s.cols, 0.0);
  for (size_t i = 0; i < s.rows; ++i) {
    for (size_t k = 0; k < s.rank; ++k) {
      for (size_t j = 0; j < s.cols; ++j) {
        r.p[i * s.rank + k] += r.m[i * s.cols + j] * q_t[k * s.cols + j];
        r.q_t[k * s.cols + j] += r.m[i * s.cols + j] * p_avg[i * s.rank + k];
      }
    }
  }
  for (size_t i = 0; i < s.rows; ++i) {
    for (size_t j = 0; j < s.cols; ++j) {
      for (size_t k = 0; k < s.rank; ++k) {
        r.approx[i * s.cols + j] += double(p_avg[i * s.rank + k]) * r.q_t[k * s.cols + j];
      }
    }
  }
  return r;
}

template <typename Project, typename Back, typename Approx>
void CheckPasses(Project project, Back back, Approx approximate) {
  for (const Shape& s : kShapes) {
    for (bool feedback : {true, false}) {
      SCOPED_TRACE(testing::Message() << s.rows << " x " << s.cols << " rank " << s.rank
                                      << (feedback ? " with" : " without") << " error feedback");
      std::vector<float> m = Random(s.rows * s.cols, 1), error = Random(m.size(), 2);
      const std::vector<float> q_t = Random(s.rank * s.cols, 3);
      const std::vector<float> p_avg = Random(s.rows * s.rank, 4);  // as if averaged
      const Reference want = Compute(s, m, feedback ? &error : nullptr, q_t, p_avg);
      const double tol = 1e-5 * (s.cols + s.rows) * 4;

      PowerSgdMatrix x{m.data(), feedback ? error.data() : nullptr, s.rows, s.cols, s.rank};
      std::vector<float> p(s.rows * s.rank, -1.0f);
      project(x, q_t.data(), p.data());
      ExpectNear(m, want.m, 1e-6);  // the error folded in
      ExpectNear(p, want.p, tol);

      std::vector<float> q_back(s.rank * s.cols, -1.0f);
      back(x, p_avg.data(), q_back.data());
      ExpectNear(q_back, want.q_t, tol);

      const std::vector<double> folded(m.begin(), m.end());
      std::vector<float> q_avg(q_back);  // as if averaged
      approximate(x, p_avg.data(), q_avg.data());
      ExpectNear(m, want.approx, tol);
      if (feedback) {
        std::vector<double> lost(folded.size());
        for (size_t i = 0; i < lost.size(); ++i) lost[i] = folded[i] - want.approx[i];
        ExpectNear(error, lost, tol);
      }
    }
  }
}

TEST(PowerSgdKernels, DispatchedPassesMatchTheFormulas) {
  CheckPasses(powersgd::FoldAndProject, powersgd::ProjectBack, powersgd::Approximate);
}

TEST(PowerSgdKernels, GenericPassesMatchTheFormulas) {
  CheckPasses(powersgd::generic::FoldAndProject, powersgd::generic::ProjectBack,
              powersgd::generic::Approximate);
}

TEST(PowerSgdKernels, Avx2PassesMatchTheFormulas) {
  if (!CpuHasAvx2()) GTEST_SKIP() << "this CPU has no AVX2";
  CheckPasses(powersgd::avx2::FoldAndProject, powersgd::avx2::ProjectBack,
              powersgd::avx2::Approximate);
}

// The two variants sum in the same order, so they agree to the last bit
// wherever the compiler does not contract a multiply and an add into one
// rounding; the bound is that rounding's.
TEST(PowerSgdKernels, GenericAndAvx2Agree) {
  if (!CpuHasAvx2()) GTEST_SKIP() << "this CPU has no AVX2";
  const Shape s{37, 300, 3};
  const std::vector<float> m0 = Random(s.rows * s.cols, 5), e0 = Random(m0.size(), 6);
  const std::vector<float> q_t = Random(s.rank * s.cols, 7);
  std::vector<float> results[2];
  int v = 0;
  for (bool avx2 : {false, true}) {
    std::vector<float> m = m0, e = e0, p(s.rows * s.rank), q(s.rank * s.cols);
    PowerSgdMatrix x{m.data(), e.data(), s.rows, s.cols, s.rank};
    (avx2 ? powersgd::avx2::FoldAndProject : powersgd::generic::FoldAndProject)(x, q_t.data(),
                                                                                p.data());
    (avx2 ? powersgd::avx2::ProjectBack : powersgd::generic::ProjectBack)(x, p.data(), q.data());
    (avx2 ? powersgd::avx2::Approximate : powersgd::generic::Approximate)(x, p.data(), q.data());
    results[v] = p;
    results[v].insert(results[v].end(), q.begin(), q.end());
    results[v].insert(results[v].end(), m.begin(), m.end());
    results[v].insert(results[v].end(), e.begin(), e.end());
    ++v;
  }
  ASSERT_EQ(results[0].size(), results[1].size());
  for (size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_NEAR(results[0][i], results[1][i], 1e-3 + 1e-5 * std::fabs(results[0][i]))
        << "value " << i;
  }
}

TEST(PowerSgdKernels, PublicPassesNameBadArguments) {
  std::vector<float> m(12, 1.0f), p(4), q_t(3, 1.0f);
  PowerSgdMatrix x{m.data(), nullptr, 4, 3, 1};
  ASSERT_TRUE(PowerSgdProject(x, q_t.data(), p.data()).ok());
  EXPECT_EQ(p, std::vector<float>(4, 3.0f));

  PowerSgdMatrix no_m = x;
  no_m.m = nullptr;
  Status s = PowerSgdProject(no_m, q_t.data(), p.data());
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_EQ(s.message(), "PowerSgdProject: the matrix m is null");

  PowerSgdMatrix no_rank = x;
  no_rank.rank = 0;
  s = PowerSgdProjectBack(no_rank, p.data(), q_t.data());
  EXPECT_EQ(s.message(),
            "PowerSgdProjectBack: rows, cols and rank must be at least 1, got 4 x 3 at "
            "rank 0");
  s = PowerSgdProjectBack(x, nullptr, q_t.data());
  EXPECT_EQ(s.message(), "PowerSgdProjectBack: p is null");
  s = PowerSgdApproximate(x, p.data(), nullptr);
  EXPECT_EQ(s.message(), "PowerSgdApproximate: q_t is null");
  PowerSgdMatrix aliased = x;
  aliased.error = m.data() + 5;  // inside m
  s = PowerSgdApproximate(aliased, p.data(), q_t.data());
  EXPECT_EQ(s.message(), "PowerSgdApproximate: error overlaps the matrix m");
  EXPECT_EQ(m, std::vector<float>(12, 1.0f));  // refused calls write nothing
}

}  // namespace
}  // namespace cohort
