// The table of COHORT_* settings: for each, its variable, `cohort run` flag,
// type, default, bounds and help line, written once. The runtime parses the
// environment through it (ReadRuntimeSettings), `cohort run` checks and
// forwards its flags and prints its --help from it, and a test checks that
// docs/configuration.md agrees with it row by row.
#ifndef COHORT_COMMON_SETTINGS_H_
#define COHORT_COMMON_SETTINGS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "common/env_config.h"

namespace cohort {

enum class SettingType {
  kSeconds,       // a number of seconds (fractions allowed)
  kMilliseconds,  // a number of milliseconds
  kCount,         // an integer
  kBytes,         // a size: 4096, 64K, 16M, 1G
  kChoice,        // one of `choices`
  kText,          // any text (a path, a list); not parsed here
};

struct SettingSpec {
  const char* variable;  // "COHORT_TCP_STREAMS"
  const char* flag;      // "--tcp-streams", or nullptr when only the variable exists
  SettingType type;
  const char* default_text;  // parsed like a value; "" means unset
  // Numeric bounds: value >= min (> min when min_exclusive) and <= max.
  double min;
  double max;
  bool min_exclusive;
  const char* choices;  // kChoice: comma-separated
  const char* help;     // one line for `cohort run --help`
};

// Every setting, in the order of docs/configuration.md.
const std::vector<SettingSpec>& AllSettings();
// The row of `variable` or `flag`; nullptr when there is none.
const SettingSpec* FindSetting(std::string_view variable);
const SettingSpec* FindSettingByFlag(std::string_view flag);

// A parsed value: `number` for numeric types (bytes and counts exactly
// representable up to 2^53), `text` always.
struct SettingValue {
  double number = 0;
  std::string text;
};

// Parses `text` as `spec`'s type and checks its bounds. Errors name `who`
// (the variable, or the flag on the command line) and the value, e.g.
// "COHORT_TCP_STREAMS must be between 1 and 16, not 99".
Result<SettingValue> ParseSetting(const SettingSpec& spec, const std::string& text,
                                  const std::string& who);
// The variable's value from `env`, or its default when unset or empty.
Result<SettingValue> ReadSetting(const EnvLookup& env, const char* variable);

}  // namespace cohort

#endif  // COHORT_COMMON_SETTINGS_H_
