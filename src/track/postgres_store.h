// The PostgreSQL tracking store, for many clients and large run counts. One
// cohort server owns a database at a time: it holds a session advisory lock
// on it, and a second server on the same database is refused with a message
// naming it (the lock goes with the first server's connection, so a killed
// server's successor can open it at once).
#ifndef COHORT_TRACK_POSTGRES_STORE_H_
#define COHORT_TRACK_POSTGRES_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "cohort/status.h"
#include "track/store.h"

namespace cohort::track {

// Connects to a libpq URI (postgresql://USER[:PASSWORD]@HOST:PORT/DB) and
// migrates the schema to the current version.
Result<std::unique_ptr<TrackingStore>> OpenPostgresStore(const std::string& uri);

// The schema version this build writes (table cohort_schema_version).
int PostgresSchemaVersion();

// The session advisory lock key a server holds on its database ("cohort"
// in ASCII, 109330144653940); pg_locks shows it as classid 25455, objid
// 1752134260 (the key's high and low 32 bits), objsubid 1.
int64_t PostgresStoreLockKey();

}  // namespace cohort::track

#endif  // COHORT_TRACK_POSTGRES_STORE_H_
