// Environment-variable parsing.
#include "common/env_config.h"

#include <cerrno>
#include <cstdlib>

namespace cohort {

std::optional<std::string> EnvString(const EnvLookup& env, const char* name) {
  const char* value = env(name);
  if (value == nullptr || value[0] == '\0') return std::nullopt;
  return std::string(value);
}

Result<int64_t> EnvInt(const EnvLookup& env, const char* name, int64_t fallback) {
  std::optional<std::string> text = EnvString(env, name);
  if (!text) return fallback;
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text->c_str(), &end, 10);
  if (errno != 0 || end == text->c_str() || *end != '\0') {
    return Status::InvalidArgument(std::string(name) + "='" + *text + "' is not an integer");
  }
  return static_cast<int64_t>(value);
}

Result<double> EnvDouble(const EnvLookup& env, const char* name, double fallback) {
  std::optional<std::string> text = EnvString(env, name);
  if (!text) return fallback;
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text->c_str(), &end);
  if (errno != 0 || end == text->c_str() || *end != '\0') {
    return Status::InvalidArgument(std::string(name) + "='" + *text + "' is not a number");
  }
  return value;
}

Result<uint64_t> ParseByteSize(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || text[0] == '-') {
    return Status::InvalidArgument("'" + text + "' is not a byte size (e.g. 4096, 64K, 16M, 1G)");
  }
  std::string suffix(end);
  uint64_t scale = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") scale = 1ull << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") scale = 1ull << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") scale = 1ull << 30;
  else if (!suffix.empty() && suffix != "B") {
    return Status::InvalidArgument("'" + text + "' has an unknown unit '" + suffix +
                                   "' (expected K, M or G)");
  }
  return static_cast<uint64_t>(value) * scale;
}

}  // namespace cohort
