// The scheduling policy registry (sched/policy.h): names parse back, unknown
// ones are refused naming the choices, and docs/scheduling.md's table of
// policies is the registry's.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "sched/policy.h"

namespace cohort::sched {
namespace {

TEST(PolicyRegistry, EveryNameParsesBackAndAnUnknownOneNamesTheChoices) {
  for (const PolicyEntry& e : kPolicies) {
    Result<PolicyKind> kind = ParsePolicyName(e.name);
    ASSERT_TRUE(kind.ok()) << e.name;
    EXPECT_EQ(*kind, e.kind);
    EXPECT_STREQ(PolicyName(e.kind), e.name);
  }
  EXPECT_EQ(ParsePolicyName("lifo").status().message(),
            "unknown policy 'lifo' (expected cohort, fifo or strict-priority)");
  EXPECT_EQ(PolicyList(), "cohort, fifo or strict-priority");
}

TEST(PolicyRegistry, TheDocsTableIsTheRegistry) {
  std::ifstream doc(std::string(COHORT_SOURCE_DIR) + "/docs/scheduling.md");
  ASSERT_TRUE(doc) << "docs/scheduling.md not found";
  std::vector<std::string> documented;
  bool in_section = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Policies";
    if (in_section && line.rfind("| `", 0) == 0) {
      documented.push_back(line.substr(3, line.find('`', 3) - 3));
    }
  }
  std::vector<std::string> registry;
  for (const PolicyEntry& e : kPolicies) registry.push_back(e.name);
  EXPECT_EQ(documented, registry);
}

}  // namespace
}  // namespace cohort::sched
