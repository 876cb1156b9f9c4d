// The allreduce algorithm registry (common/allreduce_algorithms.h): the
// settings table, the parser and docs/configuration.md all follow it.
#include "common/allreduce_algorithms.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/settings.h"

namespace cohort {
namespace {

TEST(AllreduceAlgorithms, EveryNameParsesBackAndTheSettingOffersIt) {
  const SettingSpec* spec = FindSetting("COHORT_ALLREDUCE_ALGORITHM");
  ASSERT_NE(spec, nullptr);
  EXPECT_STREQ(spec->choices, "auto,shm,ring,recursive_doubling,hierarchical");
  EXPECT_STREQ(spec->help, "auto, shm, ring, recursive_doubling or hierarchical");
  for (const AllreduceAlgorithmEntry& e : kAllreduceAlgorithms) {
    Result<AllreduceAlgorithm> parsed = ParseAllreduceAlgorithm(e.name);
    ASSERT_TRUE(parsed.ok()) << e.name;
    EXPECT_EQ(*parsed, e.algorithm);
    EXPECT_STREQ(AllreduceAlgorithmName(e.algorithm), e.name);
    EXPECT_TRUE(ParseSetting(*spec, e.name, "x").ok()) << e.name;
  }
  EXPECT_EQ(ParseAllreduceAlgorithm("tree").status().message(),
            "unknown allreduce algorithm 'tree' (expected auto, shm, ring, recursive_doubling or "
            "hierarchical)");
  EXPECT_EQ(ParseSetting(*spec, "tree", "COHORT_ALLREDUCE_ALGORITHM").status().message(),
            "COHORT_ALLREDUCE_ALGORITHM='tree' is not auto, shm, ring, recursive_doubling or "
            "hierarchical");
}

TEST(AllreduceAlgorithms, TheDocsNameEveryAlgorithm) {
  std::ifstream doc(std::string(COHORT_SOURCE_DIR) + "/docs/configuration.md");
  ASSERT_TRUE(doc) << "docs/configuration.md not found";
  std::string row;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("| `COHORT_ALLREDUCE_ALGORITHM`", 0) == 0) row = line;
  }
  ASSERT_FALSE(row.empty());
  for (const AllreduceAlgorithmEntry& e : kAllreduceAlgorithms) {
    EXPECT_NE(row.find(std::string("`") + e.name + "`"), std::string::npos)
        << "docs/configuration.md's COHORT_ALLREDUCE_ALGORITHM row does not name " << e.name;
  }
}

}  // namespace
}  // namespace cohort
