// OpenStorage: picks a backend from the location's form and reads the
// storage settings from COHORT_DATA_* and AWS_* variables.
#include "common/env_config.h"
#include "common/settings.h"
#include "data/storage.h"
#include "data/storage_cache.h"
#include "http/url.h"

namespace cohort::data {

namespace {

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string FirstSet(const EnvLookup& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    std::optional<std::string> value = EnvString(env, name);
    if (value && !value->empty()) return *value;
  }
  return "";
}

}  // namespace

Result<StorageOptions> StorageOptionsFromEnv() {
  const EnvLookup env = ProcessEnv();
  StorageOptions o;
  // Values, defaults and bounds: the settings table (common/settings.h).
  Result<SettingValue> retries = ReadSetting(env, "COHORT_DATA_RETRIES");
  Result<SettingValue> timeout = ReadSetting(env, "COHORT_DATA_REQUEST_TIMEOUT");
  Result<SettingValue> in_flight = ReadSetting(env, "COHORT_DATA_IN_FLIGHT");
  Result<SettingValue> cache_size = ReadSetting(env, "COHORT_DATA_CACHE_SIZE");
  for (const Status& st :
       {retries.status(), timeout.status(), in_flight.status(), cache_size.status()}) {
    if (!st.ok()) return st;
  }
  o.retry.max_attempts = static_cast<int>(retries->number) + 1;
  o.retry.request_timeout_s = timeout->number;
  o.max_in_flight = static_cast<int>(in_flight->number);
  o.cache_bytes = static_cast<uint64_t>(cache_size->number);
  o.cache_dir = FirstSet(env, {"COHORT_DATA_CACHE_DIR"});
  o.s3_endpoint = FirstSet(env, {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"});
  o.s3_region = FirstSet(env, {"AWS_REGION", "AWS_DEFAULT_REGION"});
  o.s3_access_key = FirstSet(env, {"AWS_ACCESS_KEY_ID"});
  o.s3_secret_key = FirstSet(env, {"AWS_SECRET_ACCESS_KEY"});
  o.s3_session_token = FirstSet(env, {"AWS_SESSION_TOKEN"});
  return o;
}

Result<std::unique_ptr<Storage>> OpenStorage(const std::string& location, bool create) {
  const bool remote = http::IsHttpUrl(location) || StartsWith(location, "s3://");
  if (!remote) return OpenStorage(location, create, StorageOptions());
  Result<StorageOptions> options = StorageOptionsFromEnv();
  if (!options.ok()) return options.status().WithContext("dataset " + location);
  return OpenStorage(location, create, *options);
}

Result<std::unique_ptr<Storage>> OpenStorage(const std::string& location, bool create,
                                             const StorageOptions& options) {
  Result<std::unique_ptr<Storage>> storage = Status::Internal("no backend");
  if (http::IsHttpUrl(location)) {
    std::string url = location;
    while (!url.empty() && url.back() == '/') url.pop_back();
    storage = OpenHttpStorage(url, options);
  } else if (StartsWith(location, "s3://")) {
    storage = OpenS3Storage(location, options);  // a prefix needs no creating
  } else {
    return OpenLocalStorage(StartsWith(location, "file://") ? location.substr(7) : location,
                            create);
  }
  if (!storage.ok() || options.cache_dir.empty()) return storage;
  Result<std::unique_ptr<CachedStorage>> cached = CachedStorage::Open(std::move(*storage), options);
  if (!cached.ok()) return cached.status();
  return std::unique_ptr<Storage>(std::move(*cached));
}

}  // namespace cohort::data
