// OpenStorage: picks a backend from the location's scheme (the registry,
// data/storage_backends.h) and reads the storage settings from COHORT_DATA_*
// and AWS_* variables.
#include "common/env_config.h"
#include "common/settings.h"
#include "data/storage.h"
#include "data/storage_backends.h"
#include "data/storage_cache.h"

namespace cohort::data {

namespace {

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
  Result<SettingValue> cache_dir = ReadSetting(env, "COHORT_DATA_CACHE_DIR");
  for (const Status& st : {retries.status(), timeout.status(), in_flight.status(),
                           cache_size.status(), cache_dir.status()}) {
    if (!st.ok()) return st;
  }
  o.retry.max_attempts = static_cast<int>(retries->number) + 1;
  o.retry.request_timeout_s = timeout->number;
  o.max_in_flight = static_cast<int>(in_flight->number);
  o.cache_bytes = static_cast<uint64_t>(cache_size->number);
  o.cache_dir = cache_dir->text;
  o.s3_endpoint = FirstSet(env, {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"});
  o.s3_region = FirstSet(env, {"AWS_REGION", "AWS_DEFAULT_REGION"});
  o.s3_access_key = FirstSet(env, {"AWS_ACCESS_KEY_ID"});
  o.s3_secret_key = FirstSet(env, {"AWS_SECRET_ACCESS_KEY"});
  o.s3_session_token = FirstSet(env, {"AWS_SESSION_TOKEN"});
  return o;
}

Result<std::unique_ptr<Storage>> OpenStorage(const std::string& location, bool create) {
  Result<const StorageBackend*> backend = FindStorageBackend(location);
  if (!backend.ok()) return backend.status();
  if (!(*backend)->remote) return (*backend)->open(location, create, StorageOptions());
  Result<StorageOptions> options = StorageOptionsFromEnv();
  if (!options.ok()) return options.status().WithContext("dataset " + location);
  return OpenStorage(location, create, *options);
}

Result<std::unique_ptr<Storage>> OpenStorage(const std::string& location, bool create,
                                             const StorageOptions& options) {
  Result<const StorageBackend*> backend = FindStorageBackend(location);
  if (!backend.ok()) return backend.status();
  Result<std::unique_ptr<Storage>> storage = (*backend)->open(location, create, options);
  if (!(*backend)->remote || !storage.ok() || options.cache_dir.empty()) return storage;
  Result<std::unique_ptr<CachedStorage>> cached = CachedStorage::Open(std::move(*storage), options);
  if (!cached.ok()) return cached.status();
  return std::unique_ptr<Storage>(std::move(*cached));
}

}  // namespace cohort::data
