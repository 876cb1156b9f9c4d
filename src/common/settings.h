// The table of COHORT_* settings: for each, its variable, `cohort run` flag,
// type, default, bounds, help line and scope, written once. It is the one list
// of the environment variables cohort reads, in C++ and in Python (through
// cohort._cohort; python/cohort/settings.py). The runtime parses the
// environment through it (ReadRuntimeSettings), `cohort run` checks and
// forwards its flags and prints its --help from it, `cohort config` prints
// every row's value and source, and tests check that docs/configuration.md
// and the code agree with it (tests/common/settings_test.cc,
// tools/check_settings.py).
#ifndef COHORT_COMMON_SETTINGS_H_
#define COHORT_COMMON_SETTINGS_H_

#include <cstdint>
#include <map>
#include <optional>
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

// Who reads a setting (the column `cohort config` and the docs group by).
enum class SettingScope {
  kRuntime,   // the library in every worker: collectives, engine, GPU, checkpoints
  kLauncher,  // cohort run and the variables it gives each worker
  kLoader,    // datasets and the data loader
  kTracking,  // tracking clients (cohort.track, TrackingRun, cohort sweep)
  kQueue,     // the job queue's clients and the variables it gives each job
  kSweep,     // cohort sweep and the variables it gives each trial
  kTesting,   // knobs for tests and benchmarks, not for production
};
// "runtime", "launcher", ...
const char* SettingScopeName(SettingScope scope);

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
  SettingScope scope;
  bool secret = false;  // a credential: `cohort config` says whether it is set, not its value
};

// Variables whose names other code passes on (to a child's environment, or
// between two programs) rather than reading them through ReadSetting: their
// rows in the table use these, so each name is written once.
namespace setting {
// What `cohort sweep` gives each trial (read by python/cohort/sweep.py).
inline constexpr char kSweepTrial[] = "COHORT_SWEEP_TRIAL";
inline constexpr char kSweepParams[] = "COHORT_SWEEP_PARAMS";
inline constexpr char kSweepResource[] = "COHORT_SWEEP_RESOURCE";
inline constexpr char kSweepCheckpointDir[] = "COHORT_SWEEP_CHECKPOINT_DIR";
inline constexpr char kSweepResumed[] = "COHORT_SWEEP_RESUMED";
inline constexpr char kSweepCloneFrom[] = "COHORT_SWEEP_CLONE_FROM";
inline constexpr char kSweepStartStep[] = "COHORT_SWEEP_START_STEP";
inline constexpr char kSweepSocket[] = "COHORT_SWEEP_SOCKET";
inline constexpr char kSweepReconnectSeconds[] = "COHORT_SWEEP_RECONNECT_S";
inline constexpr char kSweepJournalDeadlineSeconds[] = "COHORT_SWEEP_JOURNAL_DEADLINE_S";
}  // namespace setting

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
// The variable's value from `env`, or its default when unset or empty (an
// empty text when the row has no default).
Result<SettingValue> ReadSetting(const EnvLookup& env, const char* variable);
// The variable's parsed value when it is set (and not empty); nullopt when
// it is not, for readers whose fallback is not the table's default (an
// argument the caller gave, or another variable).
Result<std::optional<SettingValue>> ReadSettingIfSet(const EnvLookup& env, const char* variable);

// Where a setting's value came from, as `cohort config` prints it.
enum class SettingSource { kDefault, kEnvironment, kFlag };
const char* SettingSourceName(SettingSource source);  // "default", "environment", "flag"

// The value `cohort config` shows for `spec`: the flag's value when `flags`
// (variable -> text, from the command line) has one, else the variable's,
// else the default; its text unparsed, and whether it parses.
struct SettingReport {
  const SettingSpec* spec = nullptr;
  std::string text;  // "" when unset with no default
  SettingSource source = SettingSource::kDefault;
  Status valid;  // ParseSetting's verdict on `text` (OK for an unset one)
};
std::vector<SettingReport> ReportSettings(const EnvLookup& env,
                                          const std::map<std::string, std::string>& flags);

}  // namespace cohort

#endif  // COHORT_COMMON_SETTINGS_H_
