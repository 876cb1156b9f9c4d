// `cohort config`: every setting of the settings table (common/settings.h)
// with its scope, its value and where that came from, so a user sees what a
// job here would run with.
#include <cstdio>
#include <map>
#include <string>

#include "cli/commands.h"
#include "cli/usage_error.h"
#include "common/env_config.h"
#include "common/settings.h"
#ifndef COHORT_MINIMAL
#include "http/server_address.h"
#endif

namespace cohort::cli {
namespace {

constexpr char kSynopsis[] = "cohort config [--scope SCOPE] [--FLAG VALUE ...]";

constexpr char kHelp[] =
    "Prints every setting cohort reads (docs/configuration.md): its variable,\n"
    "scope, value and where the value came from: `default`, `environment`, or\n"
    "`flag` for a `cohort run` flag given here (e.g. --tcp-streams 4), which\n"
    "shows what `cohort run` with that flag would give its workers. A value\n"
    "the setting does not accept is printed with the reason. Credentials\n"
    "(COHORT_SECRET, tokens) show only whether they are set. COHORT_SERVER's row\n"
    "names the alias it came from (source `alias`: COHORT_TRACKING_URI or\n"
    "MLFLOW_TRACKING_URI) and warns when they name different servers.\n"
    "\n"
    "options:\n"
    "  --scope SCOPE        only the settings of SCOPE: runtime, launcher, loader,\n"
    "                       tracking, queue, sweep or testing\n"
    "  --FLAG VALUE         a `cohort run` flag of the table (cohort run --help)\n"
    "  -h, --help           print this help\n"
    "\n"
    "exit status: 0; 1 when a value is not accepted; 2 for a usage error.\n";

bool IsScope(const std::string& name) {
  for (int s = 0; s <= static_cast<int>(SettingScope::kTesting); ++s) {
    if (name == SettingScopeName(static_cast<SettingScope>(s))) return true;
  }
  return false;
}

#ifndef COHORT_MINIMAL
// Where the one server address came from (http/server_address.h): the
// COHORT_SERVER row names the alias that supplied it and warns when the
// tracking variable names another server; the COHORT_TRACKING_URI row, when
// unset, says where runs go instead.
void NoteAddress(const SettingReport& r, const EnvLookup& env, std::string* source,
                 std::string* value) {
  const std::string variable = r.spec->variable;
  if (variable == "COHORT_SERVER") {
    const http::AddressChoice server = http::ResolveServerAddress(env);
    if (!server.variable.empty() && server.variable != variable) {
      *source = "alias";
      *value = server.value + "  <- from " + server.variable;
    }
    if (std::string line = http::Disagreement(env); !line.empty())
      *value += "  <- warning: " + line;
  } else if (variable == "COHORT_TRACKING_URI" && r.text.empty()) {
    const http::AddressChoice tracking = http::ResolveTrackingUri(env);
    if (!tracking.variable.empty()) {
      *value += "  <- runs go to " + tracking.value + " (" + tracking.variable + ")";
    }
  }
}
#endif

}  // namespace

int ConfigCommand(int argc, char** argv) {
  std::map<std::string, std::string> flags;  // variable -> value
  std::string scope;
  for (int i = 0; i < argc; ++i) {
    std::string name = argv[i];
    if (name == "-h" || name == "--help") {
      PrintHelp(kSynopsis, kHelp);
      return 0;
    }
    std::string value;
    const size_t eq = name.find('=');
    const bool inline_value = name.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const SettingSpec* spec = FindSettingByFlag(name);
    if (name != "--scope" && spec == nullptr) {
      return UsageError("config", "unknown option '" + name + "'", kSynopsis);
    }
    if (!inline_value) {
      if (i + 1 >= argc) return UsageError("config", name + " needs a value", kSynopsis);
      value = argv[++i];
    }
    if (name == "--scope") {
      if (!IsScope(value)) {
        return UsageError(
            "config",
            "--scope '" + value +
                "' is not runtime, launcher, loader, tracking, queue, sweep or testing",
            kSynopsis);
      }
      scope = value;
    } else {
      flags[spec->variable] = value;
    }
  }
  int status = 0;
  std::printf("%-34s %-9s %-12s %s\n", "VARIABLE", "SCOPE", "SOURCE", "VALUE");
  const EnvLookup env = ProcessEnv();
  for (const SettingReport& r : ReportSettings(env, flags)) {
    const char* row_scope = SettingScopeName(r.spec->scope);
    if (!scope.empty() && scope != row_scope) continue;
    std::string value = r.text.empty() ? "(unset)" : r.spec->secret ? "(set, not shown)" : r.text;
    std::string source = SettingSourceName(r.source);
#ifndef COHORT_MINIMAL
    NoteAddress(r, env, &source, &value);
#endif
    if (!r.valid.ok() && !r.spec->secret) {
      value += "  <- not accepted: " + r.valid.message();
      status = 1;
    }
    std::printf("%-34s %-9s %-12s %s\n", r.spec->variable, row_scope, source.c_str(),
                value.c_str());
  }
  return status;
}

}  // namespace cohort::cli
