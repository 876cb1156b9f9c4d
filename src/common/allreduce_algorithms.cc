// The allreduce algorithm registry's lookups and lists.
#include "common/allreduce_algorithms.h"

#include <vector>

#include "common/word_list.h"

namespace cohort {
namespace {

std::vector<std::string> Names() {
  std::vector<std::string> names;
  for (const AllreduceAlgorithmEntry& e : kAllreduceAlgorithms) names.push_back(e.name);
  return names;
}

}  // namespace

const char* AllreduceAlgorithmName(AllreduceAlgorithm algorithm) {
  for (const AllreduceAlgorithmEntry& e : kAllreduceAlgorithms) {
    if (e.algorithm == algorithm) return e.name;
  }
  return "?";
}

Result<AllreduceAlgorithm> ParseAllreduceAlgorithm(const std::string& name) {
  for (const AllreduceAlgorithmEntry& e : kAllreduceAlgorithms) {
    if (name == e.name) return e.algorithm;
  }
  return Status::InvalidArgument("unknown allreduce algorithm '" + name + "' (expected " +
                                 AllreduceAlgorithmList() + ")");
}

const char* AllreduceAlgorithmChoices() {
  static const std::string text = [] {
    std::string joined;
    for (const std::string& name : Names()) joined += (joined.empty() ? "" : ",") + name;
    return joined;
  }();
  return text.c_str();
}

const char* AllreduceAlgorithmList() {
  static const std::string text = JoinWithOr(Names());
  return text.c_str();
}

}  // namespace cohort
