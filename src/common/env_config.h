// Reading COHORT_* settings from the environment, with errors that name the
// variable and the bad value. The table of all settings is docs/configuration.md.
#ifndef COHORT_COMMON_ENV_CONFIG_H_
#define COHORT_COMMON_ENV_CONFIG_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "cohort/status.h"

namespace cohort {

// Looks up an environment variable; returns nullptr when unset. Injected so
// parsing can be unit-tested without touching the process environment.
using EnvLookup = std::function<const char*(const char*)>;
EnvLookup ProcessEnv();

std::optional<std::string> EnvString(const EnvLookup& env, const char* name);
// Unset or empty -> fallback. Malformed -> kInvalidArgument naming the variable.
Result<int64_t> EnvInt(const EnvLookup& env, const char* name, int64_t fallback);
Result<double> EnvDouble(const EnvLookup& env, const char* name, double fallback);
// Parses sizes such as "4096", "64K", "16M", "1G" (binary units).
Result<uint64_t> ParseByteSize(const std::string& text);

}  // namespace cohort

#endif  // COHORT_COMMON_ENV_CONFIG_H_
