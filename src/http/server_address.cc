// The server's address, its aliases and its token from the settings table.
#include "http/server_address.h"

#include "common/logging.h"
#include "common/settings.h"
#include "http/url.h"

namespace cohort::http {
namespace {

constexpr char kServer[] = "COHORT_SERVER";

// A text setting's value as set: "" when unset or empty (its default aside,
// since which variable named the server matters here).
std::string SetText(const EnvLookup& env, const char* variable) {
  Result<std::optional<SettingValue>> value = ReadSettingIfSet(env, variable);
  return value.ok() && value->has_value() ? (*value)->text : "";
}

}  // namespace

AddressChoice ResolveTrackingUri(const EnvLookup& env) {
  for (const char* variable : {"COHORT_TRACKING_URI", "MLFLOW_TRACKING_URI", kServer}) {
    std::string value = SetText(env, variable);
    if (!value.empty()) return {IsHttpUrl(value) ? WithoutTrailingSlash(value) : value, variable};
  }
  return {};
}

AddressChoice ResolveServerAddress(const EnvLookup& env) {
  if (std::string server = SetText(env, kServer); !server.empty()) {
    return {WithoutTrailingSlash(server), kServer};
  }
  AddressChoice tracking = ResolveTrackingUri(env);
  if (IsHttpUrl(tracking.value)) return tracking;
  return {WithoutTrailingSlash(FindSetting(kServer)->default_text), ""};
}

std::string Disagreement(const EnvLookup& env) {
  AddressChoice server = ResolveServerAddress(env);
  AddressChoice tracking = ResolveTrackingUri(env);
  if (server.variable.empty() || !IsHttpUrl(tracking.value) || tracking.value == server.value) {
    return "";
  }
  return server.variable + "=" + server.value + " and " + tracking.variable + "=" + tracking.value +
         " name different servers: runs are tracked at " + tracking.value + " (" +
         tracking.variable + "); the queue, agents, pipelines and sweeps use " + server.value +
         " (" + server.variable + "). Unset one of them.";
}

void WarnOfDisagreement(const EnvLookup& env) {
  const std::string line = Disagreement(env);
  if (!line.empty()) {
    COHORT_LOG(kWarning) << line;
  }
}

std::string ServerAddress() { return ResolveServerAddress(ProcessEnv()).value; }

std::string ServerToken() {
  const EnvLookup env = ProcessEnv();
  std::string token = SetText(env, "COHORT_TRACKING_TOKEN");
  return token.empty() ? SetText(env, "MLFLOW_TRACKING_TOKEN") : token;
}

std::string WithoutTrailingSlash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace cohort::http
