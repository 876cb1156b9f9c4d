// Grid, random, Sobol and TPE: what each proposes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "cohort/sweep.h"

namespace cohort::sweep {
namespace {

ParamSpec Float(const std::string& name, double low, double high, bool log = false) {
  ParamSpec p;
  p.name = name;
  p.low = low;
  p.high = high;
  p.log = log;
  return p;
}

ParamSpec Categorical(const std::string& name, std::vector<Value> values) {
  ParamSpec p;
  p.name = name;
  p.type = ParamSpec::Type::kCategorical;
  p.values = std::move(values);
  return p;
}

// momentum (declared first) is active only with optimizer: sgd.
SpaceSpec ConditionalSpace() {
  ParamSpec momentum = Float("momentum", 0, 0.9);
  momentum.when["optimizer"] = {"sgd"};
  return {{momentum, Categorical("optimizer", {std::string("sgd"), std::string("adam")}),
           Float("lr", 1e-4, 1, true)}};
}

std::unique_ptr<Study> MakeStudy(StudyOptions o) {
  auto study = Study::Create(o);
  EXPECT_TRUE(study.ok()) << study.status().ToString();
  return std::move(*study);
}

// "x<d>", built without operator+ (which trips a false -Wrestrict in g++ 12).
std::string Dim(int d) {
  std::string name = "x";
  name += std::to_string(d);
  return name;
}

double AsDouble(const Value& v) {
  return std::holds_alternative<int64_t>(v) ? static_cast<double>(std::get<int64_t>(v))
                                            : std::get<double>(v);
}

TEST(GridSampler, CoversEveryCombinationOnce) {
  StudyOptions o;
  o.algorithm = "grid";
  o.grid_points = 3;
  ParamSpec n;
  n.name = "n";
  n.type = ParamSpec::Type::kInt;
  n.low = 1;
  n.high = 2;
  o.space = {{Float("x", 0, 1), Categorical("c", {std::string("a"), std::string("b")}), n}};
  auto study = MakeStudy(o);
  std::set<std::string> seen;
  while (auto t = study->Ask()) {
    seen.insert(ValueToString(t->params.at("x")) + "/" + ValueToString(t->params.at("c")) + "/" +
                ValueToString(t->params.at("n")));
    ASSERT_TRUE(study->Tell(t->id, 0).ok());
  }
  std::set<std::string> expected;
  for (const char* x : {"0", "0.5", "1"}) {
    for (const char* c : {"a", "b"}) {
      for (const char* k : {"1", "2"}) {
        std::string point = x;
        point.append("/").append(c).append("/").append(k);
        expected.insert(point);
      }
    }
  }
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(study->Trials().size(), 12u);
  EXPECT_TRUE(study->Finished());
}

TEST(GridSampler, ConditionalParameterVariesOnlyWhenActive) {
  StudyOptions o;
  o.algorithm = "grid";
  o.grid_points = 2;
  o.space = ConditionalSpace();
  o.space.params.pop_back();  // no lr
  auto study = MakeStudy(o);
  std::vector<std::string> seen;
  while (auto t = study->Ask()) {
    std::string s = ValueToString(t->params.at("optimizer"));
    if (t->params.count("momentum")) s += "/" + ValueToString(t->params.at("momentum"));
    seen.push_back(s);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"sgd/0", "sgd/0.90000000000000002", "adam"}));
}

// Conditional parameters are present exactly when their condition holds.
class ConditionalSamplers : public testing::TestWithParam<std::string> {};

TEST_P(ConditionalSamplers, AbsentWhenConditionFails) {
  StudyOptions o;
  o.algorithm = GetParam();
  o.budget.trials = 60;
  o.space = ConditionalSpace();
  auto study = MakeStudy(o);
  int sgd = 0, adam = 0;
  while (auto t = study->Ask()) {
    bool is_sgd = std::get<std::string>(t->params.at("optimizer")) == "sgd";
    (is_sgd ? sgd : adam)++;
    EXPECT_EQ(t->params.count("momentum"), is_sgd ? 1u : 0u) << "trial " << t->id;
    EXPECT_EQ(t->params.size(), is_sgd ? 3u : 2u);
    double lr = std::get<double>(t->params.at("lr"));
    EXPECT_GE(lr, 1e-4);
    EXPECT_LE(lr, 1.0);
    // Low loss with sgd and momentum near 0.5: TPE has a conditional to model.
    double loss = std::abs(std::log10(lr) + 2) +
                  (is_sgd ? std::abs(std::get<double>(t->params.at("momentum")) - 0.5) : 1.0);
    ASSERT_TRUE(study->Tell(t->id, loss).ok());
  }
  EXPECT_GT(sgd, 0);
  EXPECT_GT(adam, 0);
}

INSTANTIATE_TEST_SUITE_P(Sweep, ConditionalSamplers, testing::Values("random", "sobol", "tpe"));

TEST(RandomSampler, SameSeedSameTrialsOtherSeedOthers) {
  auto draw = [](std::string algorithm, uint64_t seed) {
    StudyOptions o;
    o.algorithm = algorithm;
    o.seed = seed;
    o.space = ConditionalSpace();
    auto study = MakeStudy(o);
    std::vector<std::string> out;
    for (int i = 0; i < 20; ++i) {
      auto t = study->Ask();
      out.push_back(ValueToString(t->params.at("lr")));
      EXPECT_TRUE(study->Tell(t->id, AsDouble(t->params.at("lr"))).ok());
    }
    return out;
  };
  for (const char* a : {"random", "sobol", "tpe"}) {
    EXPECT_EQ(draw(a, 7), draw(a, 7)) << a;
    EXPECT_NE(draw(a, 7), draw(a, 8)) << a;
  }
}

TEST(RandomSampler, LogScaleIsUniformInTheExponent) {
  StudyOptions o;
  o.algorithm = "random";
  o.budget.trials = 4000;
  o.space = {{Float("lr", 1e-4, 1, true)}};
  auto study = MakeStudy(o);
  int below = 0;
  while (auto t = study->Ask()) below += std::get<double>(t->params.at("lr")) < 1e-2;
  EXPECT_NEAR(below / 4000.0, 0.5, 0.03);
}

TEST(SobolSampler, MatchesTheJoeKuoSequence) {
  // Unscrambled (seed 0) points 1..7 of dimensions 1..6 are those of
  // scipy.stats.qmc.Sobol(scramble=False), shifted to their cell's middle.
  StudyOptions o;
  o.algorithm = "sobol";
  o.budget.trials = 8;
  for (int d = 0; d < 21; ++d) o.space.params.push_back(Float(Dim(100 + d), 0, 1));
  auto study = MakeStudy(o);
  std::vector<std::vector<double>> points;
  while (auto t = study->Ask()) {
    std::vector<double> p;
    for (int d = 0; d < 21; ++d) p.push_back(std::get<double>(t->params.at(Dim(100 + d))));
    points.push_back(p);
  }
  const double expected[8][6] = {{0, 0, 0, 0, 0, 0},
                                 {0.5, 0.5, 0.5, 0.5, 0.5, 0.5},
                                 {0.75, 0.25, 0.25, 0.25, 0.75, 0.75},
                                 {0.25, 0.75, 0.75, 0.75, 0.25, 0.25},
                                 {0.375, 0.375, 0.625, 0.875, 0.375, 0.125},
                                 {0.875, 0.875, 0.125, 0.375, 0.875, 0.625},
                                 {0.625, 0.125, 0.875, 0.625, 0.625, 0.875},
                                 {0.125, 0.625, 0.375, 0.125, 0.125, 0.375}};
  const double tail[3][6] = {{0.375, 0.875, 0.375, 0.375, 0.625, 0.625},
                             {0.625, 0.625, 0.625, 0.125, 0.375, 0.375},
                             {0.125, 0.125, 0.125, 0.625, 0.875, 0.875}};
  ASSERT_EQ(points.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    for (int d = 0; d < 6; ++d) EXPECT_NEAR(points[i][d], expected[i][d], 1e-9) << i << "," << d;
  }
  for (int i = 0; i < 3; ++i) {
    for (int d = 0; d < 6; ++d)
      EXPECT_NEAR(points[5 + i][15 + d], tail[i][d], 1e-9) << i << "," << d;
  }
}

TEST(SobolSampler, TooManyParametersIsAnError) {
  StudyOptions o;
  o.algorithm = "sobol";
  for (int d = 0; d < 22; ++d) o.space.params.push_back(Float(Dim(d), 0, 1));
  auto study = Study::Create(o);
  ASSERT_FALSE(study.ok());
  EXPECT_EQ(study.status().message(), "sobol supports at most 21 parameters, got 22");
}

double Branin(double x1, double x2) {
  const double b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, t = 1 / (8 * M_PI);
  return std::pow(x2 - b * x1 * x1 + c * x1 - 6, 2) + 10 * (1 - t) * std::cos(x1) + 10;
}

double BestOf(const std::string& algorithm, uint64_t seed, int trials) {
  StudyOptions o;
  o.algorithm = algorithm;
  o.seed = seed;
  o.budget.trials = trials;
  o.space = {{Float("x1", -5, 10), Float("x2", 0, 15)}};
  auto study = MakeStudy(o);
  while (auto t = study->Ask()) {
    EXPECT_TRUE(study
                    ->Tell(t->id, Branin(std::get<double>(t->params.at("x1")),
                                         std::get<double>(t->params.at("x2"))))
                    .ok());
  }
  return *study->Best()->value;
}

TEST(TpeSampler, BeatsRandomOnBranin) {
  std::vector<double> tpe, random;
  for (uint64_t seed = 0; seed < 9; ++seed) {
    tpe.push_back(BestOf("tpe", seed, 60) - 0.397887);
    random.push_back(BestOf("random", seed, 60) - 0.397887);
  }
  std::sort(tpe.begin(), tpe.end());
  std::sort(random.begin(), random.end());
  EXPECT_LT(tpe[4], random[4] / 3) << "median regret: tpe " << tpe[4] << ", random " << random[4];
}

}  // namespace
}  // namespace cohort::sweep
