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

Status ParseQuota(const std::string& text, std::map<std::string, int>* quota) {
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? text.npos : comma - start);
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--quota: '" + item + "' is not PROJECT=SLOTS");
    }
    Result<int> slots = ParseNonNegativeInt("--quota " + item.substr(0, eq), item.substr(eq + 1));
    if (!slots.ok()) return slots.status();
    (*quota)[item.substr(0, eq)] = *slots;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return Status::OK();
}

}  // namespace cohort::cli
