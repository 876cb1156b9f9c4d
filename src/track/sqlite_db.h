// A thin RAII layer over the SQLite C API for the tracking store: one
// connection, prepared statements with bound values (never text pasted into
// SQL), and errors as Status naming the statement.
#ifndef COHORT_TRACK_SQLITE_DB_H_
#define COHORT_TRACK_SQLITE_DB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "cohort/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace cohort::track {

// A value bound to a '?' placeholder.
using SqlValue = std::variant<std::nullptr_t, int64_t, double, std::string>;

class SqliteStatement {
 public:
  SqliteStatement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~SqliteStatement();
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  Status Bind(int index, const SqlValue& value);  // 1-based
  Status BindAll(const std::vector<SqlValue>& values);
  // Advances one row: true when a row is ready, false when done.
  Result<bool> Step();
  // Runs to completion, ignoring rows.
  Status Run();
  Status Reset();  // ready to bind and run again

  int64_t Int(int column) const;
  double Double(int column) const;
  std::string Text(int column) const;
  bool IsNull(int column) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

class SqliteDb {
 public:
  // Opens (creating) the file with WAL journaling and full fsync on commit.
  static Result<std::unique_ptr<SqliteDb>> Open(const std::string& path);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  Result<std::unique_ptr<SqliteStatement>> Prepare(const std::string& sql);
  Status Exec(const std::string& sql);  // one or more statements, no values
  // Prepare + bind + run to completion.
  Status Run(const std::string& sql, const std::vector<SqlValue>& values);
  int64_t Changes() const;
  const std::string& path() const { return path_; }

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back unless Commit() was called.
class SqliteTransaction {
 public:
  explicit SqliteTransaction(SqliteDb* db) : db_(db) {}
  ~SqliteTransaction();
  Status Begin();
  Status Commit();

 private:
  SqliteDb* db_;
  bool open_ = false;
};

}  // namespace cohort::track

#endif  // COHORT_TRACK_SQLITE_DB_H_
