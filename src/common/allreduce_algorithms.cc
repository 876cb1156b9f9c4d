// The allreduce algorithm registry's lookups and lists.
#include "common/allreduce_algorithms.h"

namespace cohort {
namespace {

std::string Joined(const char* comma, const char* last) {
  std::string text;
  const size_t n = sizeof(kAllreduceAlgorithms) / sizeof(kAllreduceAlgorithms[0]);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) text += i + 1 == n ? last : comma;
    text += kAllreduceAlgorithms[i].name;
  }
  return text;
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
  static const std::string text = Joined(",", ",");
  return text.c_str();
}

const char* AllreduceAlgorithmList() {
  static const std::string text = Joined(", ", " or ");
  return text.c_str();
}

}  // namespace cohort
