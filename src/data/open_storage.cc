// OpenStorage: picks a backend from the location's form and reads the
// storage settings from COHORT_DATA_* and AWS_* variables.
#include "common/env_config.h"
#include "data/storage.h"
#include "data/storage_cache.h"

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
  Result<int64_t> attempts = EnvInt(env, "COHORT_DATA_RETRIES", o.retry.max_attempts - 1);
  if (!attempts.ok()) return attempts.status();
  if (*attempts < 0 || *attempts > 100)
    return Status::InvalidArgument("COHORT_DATA_RETRIES must be between 0 and 100");
  o.retry.max_attempts = static_cast<int>(*attempts) + 1;
  Result<double> timeout = EnvDouble(env, "COHORT_DATA_REQUEST_TIMEOUT", o.retry.request_timeout_s);
  if (!timeout.ok()) return timeout.status();
  if (*timeout <= 0) return Status::InvalidArgument("COHORT_DATA_REQUEST_TIMEOUT must be > 0");
  o.retry.request_timeout_s = *timeout;
  Result<int64_t> in_flight = EnvInt(env, "COHORT_DATA_IN_FLIGHT", o.max_in_flight);
  if (!in_flight.ok()) return in_flight.status();
  if (*in_flight < 1 || *in_flight > 1024)
    return Status::InvalidArgument("COHORT_DATA_IN_FLIGHT must be between 1 and 1024");
  o.max_in_flight = static_cast<int>(*in_flight);
  o.cache_dir = FirstSet(env, {"COHORT_DATA_CACHE_DIR"});
  std::string cache_size = FirstSet(env, {"COHORT_DATA_CACHE_SIZE"});
  if (!cache_size.empty()) {
    Result<uint64_t> bytes = ParseByteSize(cache_size);
    if (!bytes.ok() || *bytes == 0) {
      return Status::InvalidArgument("COHORT_DATA_CACHE_SIZE='" + cache_size +
                                     "' is not a positive size (e.g. 512M, 20G)");
    }
    o.cache_bytes = *bytes;
  }
  o.s3_endpoint = FirstSet(env, {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"});
  o.s3_region = FirstSet(env, {"AWS_REGION", "AWS_DEFAULT_REGION"});
  o.s3_access_key = FirstSet(env, {"AWS_ACCESS_KEY_ID"});
  o.s3_secret_key = FirstSet(env, {"AWS_SECRET_ACCESS_KEY"});
  o.s3_session_token = FirstSet(env, {"AWS_SESSION_TOKEN"});
  return o;
}

Result<std::unique_ptr<Storage>> OpenStorage(const std::string& location, bool create) {
  const bool remote = StartsWith(location, "http://") || StartsWith(location, "https://") ||
                      StartsWith(location, "s3://");
  if (!remote) return OpenStorage(location, create, StorageOptions());
  Result<StorageOptions> options = StorageOptionsFromEnv();
  if (!options.ok()) return options.status().WithContext("dataset " + location);
  return OpenStorage(location, create, *options);
}

Result<std::unique_ptr<Storage>> OpenStorage(const std::string& location, bool create,
                                             const StorageOptions& options) {
  Result<std::unique_ptr<Storage>> storage = Status::Internal("no backend");
  if (StartsWith(location, "http://") || StartsWith(location, "https://")) {
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
