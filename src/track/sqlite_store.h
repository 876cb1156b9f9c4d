// The SQLite tracking store (the embedded default). One process owns a store
// file at a time: it holds an exclusive flock on the file itself, and a
// second server or client opening the same file, by any name (a symlink, a
// hard link), is refused with a message naming the holder.
#ifndef COHORT_TRACK_SQLITE_STORE_H_
#define COHORT_TRACK_SQLITE_STORE_H_

#include <memory>
#include <string>

#include "cohort/status.h"
#include "track/store.h"

namespace cohort::track {

// Opens or creates the store at `path`, migrating its schema to the current
// version. The parent directory is created when missing.
Result<std::unique_ptr<TrackingStore>> OpenSqliteStore(const std::string& path);

// The schema version this build writes (PRAGMA user_version).
int SqliteSchemaVersion();

// `path` with a leading "~/" replaced by $HOME (store URIs may use it).
std::string ExpandHome(const std::string& path);

}  // namespace cohort::track

#endif  // COHORT_TRACK_SQLITE_STORE_H_
