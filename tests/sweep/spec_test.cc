// The sweep spec: the issue's example parses; bad specs name line and key.
#include <gtest/gtest.h>

#include "cohort/sweep.h"

namespace cohort::sweep {
namespace {

const char* kExample = R"(name: digits-lr
command: /usr/bin/python3 examples/pytorch_digits.py   # each trial is a cohort job
workers: 2                       # ranks per trial (a gang)
metric: {name: test_accuracy, mode: max}
algorithm: asha                  # grid | random | tpe | asha | hyperband | pbt
budget: {trials: 64, concurrent: 4, resource: epoch, min_resource: 1, max_resource: 27, reduction: 3}
seed: 0
parameters:
  lr: {type: float, low: 1.0e-4, high: 1.0, log: true}
  batch_size: {type: categorical, values: [16, 32, 64]}
  momentum: {type: float, low: 0.0, high: 0.99, when: {optimizer: sgd}}
  optimizer: {type: categorical, values: [sgd, adam]}
)";

TEST(SweepSpec, ParsesTheIssuesExample) {
  auto spec = ParseSpec(kExample, "digits.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name, "digits-lr");
  EXPECT_EQ(spec->command,
            (std::vector<std::string>{"/usr/bin/python3", "examples/pytorch_digits.py"}));
  EXPECT_EQ(spec->workers, 2);
  EXPECT_EQ(spec->metric, "test_accuracy");
  EXPECT_TRUE(spec->study.maximize);
  EXPECT_EQ(spec->study.algorithm, "asha");
  EXPECT_EQ(spec->study.budget.trials, 64);
  EXPECT_EQ(spec->study.budget.concurrent, 4);
  EXPECT_EQ(spec->study.budget.max_resource, 27);
  const auto& params = spec->study.space.params;
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].name, "lr");
  EXPECT_TRUE(params[0].log);
  EXPECT_DOUBLE_EQ(params[0].low, 1e-4);
  EXPECT_EQ(params[1].values, (std::vector<Value>{int64_t{16}, int64_t{32}, int64_t{64}}));
  EXPECT_EQ(params[2].when.at("optimizer"), std::vector<std::string>{"sgd"});
  EXPECT_EQ(params[3].values, (std::vector<Value>{std::string("sgd"), std::string("adam")}));
  EXPECT_TRUE(Study::Create(spec->study).ok());
}

std::string ErrorOf(std::string text) {
  auto spec = ParseSpec(text, "s.yaml");
  EXPECT_FALSE(spec.ok());
  return spec.ok() ? "" : spec.status().message();
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(SweepSpec, BadSpecsNameTheLineAndKey) {
  EXPECT_EQ(ErrorOf(Replace(kExample, "algorithm: asha", "algorithm: bayes")),
            "s.yaml:5: algorithm: unknown algorithm 'bayes' (grid, random, sobol, tpe, asha, "
            "hyperband or pbt)");
  EXPECT_EQ(ErrorOf(Replace(kExample, "low: 1.0e-4, high: 1.0", "low: 2.0, high: 1.0")),
            "s.yaml:9: parameters.lr: low (2) > high (1)");
  EXPECT_EQ(
      ErrorOf(
          Replace(kExample, "{type: categorical, values: [16, 32, 64]}", "{type: categorical}")),
      "s.yaml:10: parameters.batch_size.values: a categorical needs a non-empty list of values");
  EXPECT_EQ(ErrorOf(Replace(kExample, "when: {optimizer: sgd}", "when: {optimiser: sgd}")),
            "s.yaml:11: parameters.momentum.when.optimiser: unknown parameter 'optimiser'");
  EXPECT_EQ(ErrorOf(Replace(kExample, "when: {optimizer: sgd}", "when: {optimizer: rmsprop}")),
            "s.yaml:11: parameters.momentum.when.optimizer: 'optimizer' has no value 'rmsprop'");
  EXPECT_EQ(ErrorOf(Replace(kExample, "seed: 0", "sed: 0")),
            "s.yaml:7: sed: unknown key (expected one of: algorithm, budget, command, grid_points, "
            "metric, name, parameters, sampler, seed, sobol, workers)");
  EXPECT_EQ(ErrorOf(Replace(kExample, "trials: 64", "trials: lots")),
            "s.yaml:6: budget.trials: expected an integer, got 'lots'");
  EXPECT_EQ(ErrorOf(Replace(kExample, "mode: max", "mode: up")),
            "s.yaml:4: metric.mode: expected min or max, got 'up'");
  EXPECT_EQ(ErrorOf(Replace(kExample, "{type: float, low: 1.0e-4", "{type: real, low: 1.0e-4")),
            "s.yaml:9: parameters.lr.type: unknown type 'real' (float, int or categorical)");
  EXPECT_EQ(ErrorOf("name: [unclosed\n"),
            "s.yaml:2: not valid YAML: end of sequence flow not found");
}

}  // namespace
}  // namespace cohort::sweep
