// The storage backends' rows and the choice of one by a location's scheme.
#include "data/storage_backends.h"

#include <sstream>

#include "common/word_list.h"

namespace cohort::data {
namespace {

constexpr char kRemoteSettings[] =
    "COHORT_DATA_RETRIES, COHORT_DATA_REQUEST_TIMEOUT, COHORT_DATA_IN_FLIGHT, "
    "COHORT_DATA_CACHE_DIR, COHORT_DATA_CACHE_SIZE";

Result<std::unique_ptr<Storage>> OpenLocal(const std::string& location, bool create,
                                           const StorageOptions&) {
  const bool file_url = location.rfind("file://", 0) == 0;
  return OpenLocalStorage(file_url ? location.substr(7) : location, create);
}

Result<std::unique_ptr<Storage>> OpenHttp(const std::string& location, bool,
                                          const StorageOptions& options) {
  std::string url = location;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return OpenHttpStorage(url, options);
}

Result<std::unique_ptr<Storage>> OpenS3(const std::string& location, bool,
                                        const StorageOptions& options) {
  return OpenS3Storage(location, options);  // a prefix needs no creating
}

const std::vector<StorageBackend> kBackends = {
    {"local", "file://", "DIR (or file://DIR)", "",
     "a directory, created by writers; the compare-and-swap is an flock", false, OpenLocal},
    {"http", "http://,https://", "http(s)://HOST/PATH (read-only)", kRemoteSettings,
     "read-only, range requests; no listing", true, OpenHttp},
    {"s3", "s3://", "s3://BUCKET/PREFIX",
     "COHORT_DATA_RETRIES, COHORT_DATA_REQUEST_TIMEOUT, COHORT_DATA_IN_FLIGHT, "
     "COHORT_DATA_CACHE_DIR, COHORT_DATA_CACHE_SIZE, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
     "AWS_SESSION_TOKEN, AWS_REGION, AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL",
     "any S3-compatible store, SigV4-signed; the compare-and-swap is a conditional PUT", true,
     OpenS3},
};

std::vector<std::string> Split(const std::string& list) {
  std::vector<std::string> parts;
  std::istringstream in(list);
  for (std::string part; std::getline(in, part, ',');) {
    while (!part.empty() && part.front() == ' ') part.erase(0, 1);
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// "s3://" for "s3://b/p"; "" when `location` has no scheme (letters, digits,
// '+', '-', '.' before "://", as RFC 3986 writes one).
std::string SchemeOf(const std::string& location) {
  const size_t end = location.find("://");
  if (end == std::string::npos || end == 0) return "";
  for (size_t i = 0; i < end; ++i) {
    const char c = location[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    const bool other = (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
    if (!(letter || (i > 0 && other))) return "";
  }
  return location.substr(0, end + 3);
}

}  // namespace

const std::vector<StorageBackend>& StorageBackends() { return kBackends; }

Result<const StorageBackend*> FindStorageBackend(const std::string& location) {
  const std::string scheme = SchemeOf(location);
  if (scheme.empty()) return &kBackends.front();
  std::vector<std::string> known;
  for (const StorageBackend& backend : kBackends) {
    for (const std::string& s : Split(backend.schemes)) {
      if (s == scheme) return &backend;
      known.push_back(s);
    }
  }
  return Status::InvalidArgument("dataset location '" + location + "': unknown scheme " + scheme +
                                 "; known: " + JoinWithOr(known) + ", or a local path");
}

std::string StorageLocationForms() {
  std::vector<std::string> forms;
  for (const StorageBackend& backend : kBackends) forms.push_back(backend.form);
  return JoinWithOr(forms);
}

std::string StorageBackendsTable() {
  std::string table = "| backend | location | settings | what it is |\n|---|---|---|---|\n";
  for (const StorageBackend& backend : kBackends) {
    std::string settings;
    for (const std::string& s : Split(backend.settings)) {
      settings += (settings.empty() ? "`" : ", `") + s + "`";
    }
    table += std::string("| ") + backend.name + " | `" + backend.form + "` | " +
             (settings.empty() ? "none" : settings) + " | " + backend.doc + " |\n";
  }
  return table;
}

}  // namespace cohort::data
