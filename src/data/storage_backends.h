// The registry of dataset storage backends: one row per backend naming it,
// the location forms (URI schemes) that pick it, the settings it reads and
// its line in the docs. OpenStorage picks a backend here, `cohort data`'s
// help lists the forms from here, an unknown scheme's error lists the known
// ones from here, and docs/dataset-format.md's "Backends" table is
// StorageBackendsTable() (a test keeps the two equal). A new backend is one
// row here and its Open function (data/storage.h).
#ifndef COHORT_DATA_STORAGE_BACKENDS_H_
#define COHORT_DATA_STORAGE_BACKENDS_H_

#include <memory>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "data/storage.h"

namespace cohort::data {

struct StorageBackend {
  const char* name;  // "local", "http", "s3"
  // The schemes that pick it, comma-separated ("http://,https://"). The
  // local backend also takes every location without a scheme (a path).
  const char* schemes;
  const char* form;  // the location as help and docs write it: "s3://BUCKET/PREFIX"
  // The settings it reads (docs/configuration.md), comma-separated; "" for none.
  const char* settings;
  const char* doc;  // one line for the docs table
  // Remote: its options come from the environment (StorageOptionsFromEnv)
  // and the local cache may wrap it.
  bool remote;
  // Opens `location` (as given, scheme included).
  Result<std::unique_ptr<Storage>> (*open)(const std::string& location, bool create,
                                           const StorageOptions& options);
};

// Every backend, the local one first.
const std::vector<StorageBackend>& StorageBackends();

// The backend `location` names: by its scheme ("s3://..."); a location
// without one is a local path. An unknown scheme is kInvalidArgument:
// "dataset location 'gs://b/x': unknown scheme gs://; known: file://,
// http://, https:// or s3://, or a local path".
Result<const StorageBackend*> FindStorageBackend(const std::string& location);

// "a directory (or file://DIR), http(s)://HOST/PATH (read-only) or
// s3://BUCKET/PREFIX", for help texts.
std::string StorageLocationForms();

// docs/dataset-format.md's table of backends, in Markdown, one row each.
std::string StorageBackendsTable();

}  // namespace cohort::data

#endif  // COHORT_DATA_STORAGE_BACKENDS_H_
