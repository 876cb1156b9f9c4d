// Reads a small CSV file (no quoting) into rows of cells, for tests of the
// CSV logs the library writes (e.g. COHORT_AUTOTUNE_LOG).
#ifndef COHORT_TESTS_SUPPORT_READ_CSV_H_
#define COHORT_TESTS_SUPPORT_READ_CSV_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace cohort::testing {

// Every line of `path` split at commas; an empty last cell is kept.
inline std::vector<std::vector<std::string>> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream cellstream(line);
    for (std::string cell; std::getline(cellstream, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace cohort::testing

#endif  // COHORT_TESTS_SUPPORT_READ_CSV_H_
