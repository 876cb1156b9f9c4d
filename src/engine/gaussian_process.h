// GaussianProcess: regression with a squared-exponential kernel over points
// in [0, 1]^d, the model behind the autotuner's Bayesian search
// (engine/bayesian_search.h). Scores are standardized before fitting, so the
// kernel's unit signal variance and the noise are relative to their spread.
#ifndef COHORT_ENGINE_GAUSSIAN_PROCESS_H_
#define COHORT_ENGINE_GAUSSIAN_PROCESS_H_

#include <vector>

namespace cohort {

class GaussianProcess {
 public:
  // `length_scale`: how far (in [0, 1] units) scores stay correlated;
  // `noise`: the variance added to each observation.
  GaussianProcess(double length_scale, double noise);

  // Fits to `x` (points of equal dimension) and their `y`.
  void Fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y);

  struct Prediction {
    double mean = 0;    // in the units of y
    double stddev = 0;  // in the units of y
  };
  Prediction Predict(const std::vector<double>& x) const;

  // Expected improvement of `x` over `best` (units of y), less `xi` of it
  // (relative to the spread of the scores) demanded for exploring (Jones et
  // al. 1998; Brochu et al. 2010, 2.3).
  double ExpectedImprovement(const std::vector<double>& x, double best, double xi) const;

 private:
  double Kernel(const std::vector<double>& a, const std::vector<double>& b) const;
  // Solves L z = b in place (forward substitution) with the Cholesky factor.
  void SolveLower(std::vector<double>* b) const;

  const double length_scale_;
  const double noise_;
  std::vector<std::vector<double>> x_;
  std::vector<std::vector<double>> chol_;  // lower Cholesky factor of K + noise I
  std::vector<double> alpha_;              // (K + noise I)^-1 y (standardized)
  double y_mean_ = 0, y_scale_ = 1;
};

}  // namespace cohort

#endif  // COHORT_ENGINE_GAUSSIAN_PROCESS_H_
