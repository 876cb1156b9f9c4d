// The server's address and token from the settings table.
#include "http/server_address.h"

#include "common/settings.h"

namespace cohort::http {
namespace {

std::string Text(const char* variable) {
  Result<SettingValue> value = ReadSetting(ProcessEnv(), variable);
  return value.ok() ? value->text : "";
}

}  // namespace

std::string ServerAddress() { return WithoutTrailingSlash(Text("COHORT_SERVER")); }

std::string ServerToken() {
  std::string token = Text("COHORT_TRACKING_TOKEN");
  return token.empty() ? Text("MLFLOW_TRACKING_TOKEN") : token;
}

std::string WithoutTrailingSlash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace cohort::http
