// The SQLite connection of the tracking store: a thin RAII layer over the
// SQLite C API, errors as Status naming the statement.
#ifndef COHORT_TRACK_SQLITE_DB_H_
#define COHORT_TRACK_SQLITE_DB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "track/sql_connection.h"

struct sqlite3;
struct sqlite3_stmt;

namespace cohort::track {

class SqliteStatement : public SqlStatement {
 public:
  SqliteStatement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~SqliteStatement() override;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  Status BindAll(const std::vector<SqlValue>& values) override;
  Result<bool> Step() override;
  void Reset() override;

  int64_t Int(int column) const override;
  double Double(int column) const override;
  std::string Text(int column) const override;
  bool IsNull(int column) const override;

 private:
  Status Bind(int index, const SqlValue& value);  // 1-based

  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

class SqliteDb : public SqlConnection {
 public:
  // Opens (creating) the file with WAL journaling and full fsync on commit.
  // A file another connection has open, under this name or any other (a
  // symlink, a hard link), is refused, naming the process that holds it and
  // ending with `advice` (what to do instead: the flag that picks the file).
  static Result<std::unique_ptr<SqliteDb>> Open(
      const std::string& path, const std::string& advice = "use that server, or another --store");
  ~SqliteDb() override;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  Result<std::unique_ptr<SqlStatement>> Prepare(const std::string& sql) override;
  Status Exec(const std::string& sql) override;
  int64_t Changes() const override;
  Status Begin() override;               // BEGIN IMMEDIATE
  Result<int> SchemaVersion() override;  // PRAGMA user_version
  Status SetSchemaVersion(int version) override;
  const std::string& name() const override { return path_; }

 private:
  SqliteDb(sqlite3* db, std::string path, int lock_fd)
      : db_(db), path_(std::move(path)), lock_fd_(lock_fd) {}
  sqlite3* db_;
  std::string path_;
  int lock_fd_;  // the store file, flock'd while the connection is open
};

}  // namespace cohort::track

#endif  // COHORT_TRACK_SQLITE_DB_H_
