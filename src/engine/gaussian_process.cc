// GaussianProcess: Cholesky fit and posterior of a squared-exponential GP.
#include "engine/gaussian_process.h"

#include <algorithm>
#include <cmath>

namespace cohort {

GaussianProcess::GaussianProcess(double length_scale, double noise)
    : length_scale_(length_scale), noise_(noise) {}

double GaussianProcess::Kernel(const std::vector<double>& a, const std::vector<double>& b) const {
  double d2 = 0;
  for (size_t i = 0; i < a.size(); ++i) d2 += (a[i] - b[i]) * (a[i] - b[i]);
  return std::exp(-0.5 * d2 / (length_scale_ * length_scale_));
}

void GaussianProcess::Fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y) {
  x_ = x;
  const size_t n = x.size();
  // Standardize: the kernel's unit variance then matches the scores' spread.
  y_mean_ = 0;
  for (double v : y) y_mean_ += v / static_cast<double>(n);
  double var = 0;
  for (double v : y) var += (v - y_mean_) * (v - y_mean_) / static_cast<double>(n);
  y_scale_ = var > 0 ? std::sqrt(var) : 1;
  chol_.assign(n, std::vector<double>(n, 0));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j <= i; ++j) {
      double sum = Kernel(x[i], x[j]) + (i == j ? noise_ : 0);
      for (size_t k = 0; k < j; ++k) sum -= chol_[i][k] * chol_[j][k];
      // The noise on the diagonal keeps the matrix positive definite.
      chol_[i][j] = i == j ? std::sqrt(std::max(sum, 1e-12)) : sum / chol_[j][j];
    }
  }
  alpha_.resize(n);
  for (size_t i = 0; i < n; ++i) alpha_[i] = (y[i] - y_mean_) / y_scale_;
  SolveLower(&alpha_);
  // Back substitution: L^T alpha = z.
  for (size_t i = n; i-- > 0;) {
    for (size_t k = i + 1; k < n; ++k) alpha_[i] -= chol_[k][i] * alpha_[k];
    alpha_[i] /= chol_[i][i];
  }
}

void GaussianProcess::SolveLower(std::vector<double>* b) const {
  for (size_t i = 0; i < b->size(); ++i) {
    for (size_t k = 0; k < i; ++k) (*b)[i] -= chol_[i][k] * (*b)[k];
    (*b)[i] /= chol_[i][i];
  }
}

GaussianProcess::Prediction GaussianProcess::Predict(const std::vector<double>& x) const {
  std::vector<double> k(x_.size());
  double mean = 0;
  for (size_t i = 0; i < x_.size(); ++i) {
    k[i] = Kernel(x, x_[i]);
    mean += k[i] * alpha_[i];
  }
  SolveLower(&k);
  double var = 1;
  for (double v : k) var -= v * v;
  return {y_mean_ + y_scale_ * mean, y_scale_ * std::sqrt(std::max(var, 0.0))};
}

double GaussianProcess::ExpectedImprovement(const std::vector<double>& x, double best,
                                            double xi) const {
  const Prediction p = Predict(x);
  if (p.stddev <= 0) return 0;
  const double improvement = p.mean - best - xi * y_scale_;
  const double z = improvement / p.stddev;
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
  return improvement * cdf + p.stddev * pdf;
}

}  // namespace cohort
