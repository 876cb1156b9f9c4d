// Helpers shared by the dataset tests: a scratch directory per test and
// small sample builders.
#ifndef COHORT_TESTS_DATA_DATA_TEST_UTIL_H_
#define COHORT_TESTS_DATA_DATA_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cohort/data.h"

namespace cohort::data::testing {

// A fresh directory under $TMPDIR, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cohort-data-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
    EXPECT_FALSE(path_.empty());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Files under DIR/KIND ("chunks", "commits"), scratch files excluded.
inline size_t CountObjects(const std::string& dir, const std::string& kind) {
  size_t n = 0;
  if (!std::filesystem::exists(dir + "/" + kind)) return 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir + "/" + kind)) {
    std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.find('.') == std::string::npos) ++n;
  }
  return n;
}

// One-column sample: a float32 vector of `n` values starting at `base`.
inline Sample FloatSample(float base, size_t n = 16) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base + static_cast<float>(i);
  return {Value::Array(DataType::kFloat32, {n}, v.data())};
}

inline Schema FloatSchema() { return {{"x", ColumnKind::kArray, DataType::kFloat32}}; }

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

}  // namespace cohort::data::testing

#endif  // COHORT_TESTS_DATA_DATA_TEST_UTIL_H_
