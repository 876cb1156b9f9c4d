// Numeric flag values.
#include "cli/flag_values.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>

namespace cohort::cli {
namespace {

// Whole-string integer in [min, INT_MAX], or nothing.
bool ParseInt(const std::string& text, long min, int* out) {
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < min || value > INT_MAX) return false;
  *out = static_cast<int>(value);
  return true;
}

// Whole-string finite number at least `min` (strictly above it when `strict`).
bool ParseNumber(const std::string& text, double min, bool strict, double* out) {
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(value)) return false;
  if (value < min || (strict && value == min)) return false;
  *out = value;
  return true;
}

}  // namespace

Result<int> ParsePositiveInt(const std::string& flag, const std::string& text) {
  int value = 0;
  if (!ParseInt(text, 1, &value)) {
    return Status::InvalidArgument(flag + " '" + text + "' is not a positive integer");
  }
  return value;
}

Result<int> ParseNonNegativeInt(const std::string& flag, const std::string& text) {
  int value = 0;
  if (!ParseInt(text, 0, &value)) {
    return Status::InvalidArgument(flag + " '" + text + "' is not a non-negative integer");
  }
  return value;
}

Result<double> ParsePositiveSeconds(const std::string& flag, const std::string& text) {
  double value = 0;
  if (!ParseNumber(text, 0, /*strict=*/true, &value)) {
    return Status::InvalidArgument(flag + " '" + text + "' is not a positive number of seconds");
  }
  return value;
}

Result<double> ParseNonNegativeNumber(const std::string& flag, const std::string& text) {
  double value = 0;
  if (!ParseNumber(text, 0, /*strict=*/false, &value)) {
    return Status::InvalidArgument(flag + " '" + text + "' is not a non-negative number");
  }
  return value;
}

}  // namespace cohort::cli
