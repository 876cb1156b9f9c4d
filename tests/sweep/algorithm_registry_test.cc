// The sweep algorithm registry (sweep/algorithm_registry.h): every row builds
// a study, the lists derive from it, and docs/sweeps.md names its algorithms
// in its order.
#include "sweep/algorithm_registry.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

namespace cohort::sweep {
namespace {

TEST(SweepAlgorithmRegistry, EveryAlgorithmBuildsAStudy) {
  for (const AlgorithmEntry& e : SweepAlgorithms()) {
    SCOPED_TRACE(e.name);
    EXPECT_NE(e.make_sampler == nullptr, e.make == nullptr) << "a sampler or built over one";
    StudyOptions o;
    o.algorithm = e.name;
    ParamSpec x;
    x.name = "x";
    o.space.params.push_back(x);
    o.budget.concurrent = 2;
    Result<std::unique_ptr<Study>> study = Study::Create(o);
    ASSERT_TRUE(study.ok()) << study.status().ToString();
  }
  EXPECT_EQ(SweepAlgorithmList(), "grid, random, sobol, tpe, asha, hyperband or pbt");
  EXPECT_EQ(SamplerChoiceList(), "random, sobol or tpe");
  EXPECT_EQ(FindSweepAlgorithm("bayes"), nullptr);
  EXPECT_TRUE(FindSweepAlgorithm("hyperband")->has_rungs);
  EXPECT_TRUE(FindSweepAlgorithm("pbt")->needs_population);
}

TEST(SweepAlgorithmRegistry, TheDocsListTheRegistrysAlgorithms) {
  std::ifstream doc(std::string(COHORT_SOURCE_DIR) + "/docs/sweeps.md");
  ASSERT_TRUE(doc) << "docs/sweeps.md not found";
  std::string row;
  for (std::string line; std::getline(doc, line);) {
    const std::string start = "| `algorithm` |";
    if (line.rfind(start, 0) == 0) row = line.substr(start.size());
  }
  ASSERT_FALSE(row.empty()) << "no `algorithm` row in docs/sweeps.md";
  std::vector<std::string> documented;
  for (size_t at = row.find('`'); at != std::string::npos; at = row.find('`', at + 1)) {
    const size_t end = row.find('`', at + 1);
    documented.push_back(row.substr(at + 1, end - at - 1));
    at = end;
  }
  std::vector<std::string> registry;
  for (const AlgorithmEntry& e : SweepAlgorithms()) registry.push_back(e.name);
  EXPECT_EQ(documented, registry);
}

}  // namespace
}  // namespace cohort::sweep
