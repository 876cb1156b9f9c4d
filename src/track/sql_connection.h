// The SQL connection a tracking store runs on, whatever the database:
// statements with bound values (never text pasted into SQL), rows read by
// column, transactions and the schema version. SQLite (sqlite_db.h) and
// PostgreSQL (postgres_db.h) implement it; the store's SQL is written once
// against it (sql_store.h) in the dialect both accept.
#ifndef COHORT_TRACK_SQL_CONNECTION_H_
#define COHORT_TRACK_SQL_CONNECTION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "cohort/status.h"

namespace cohort::track {

// A value bound to a placeholder: '?' (the next value) or '?N' (value N).
using SqlValue = std::variant<std::nullptr_t, int64_t, double, std::string>;

class SqlStatement {
 public:
  virtual ~SqlStatement() = default;

  virtual Status BindAll(const std::vector<SqlValue>& values) = 0;
  // Advances one row: true when a row is ready, false when done. A
  // uniqueness violation is a kAlreadyExists Status.
  virtual Result<bool> Step() = 0;
  // Ready to bind and run again.
  virtual void Reset() = 0;

  virtual int64_t Int(int column) const = 0;
  virtual double Double(int column) const = 0;
  virtual std::string Text(int column) const = 0;
  virtual bool IsNull(int column) const = 0;

  // Runs to completion, ignoring rows.
  Status Run();
  // Runs to completion, calling `row` with each row.
  Status ForEachRow(const std::function<void(const SqlStatement&)>& row);
};

class SqlConnection {
 public:
  virtual ~SqlConnection() = default;

  virtual Result<std::unique_ptr<SqlStatement>> Prepare(const std::string& sql) = 0;
  // One or more statements, no values.
  virtual Status Exec(const std::string& sql) = 0;
  // Rows changed by the last statement run.
  virtual int64_t Changes() const = 0;
  // Starts a transaction that writes (SQLite takes its write lock at once).
  virtual Status Begin() = 0;
  // The schema version stored in the database (0 when new), and setting it
  // inside a migration's transaction.
  virtual Result<int> SchemaVersion() = 0;
  virtual Status SetSchemaVersion(int version) = 0;
  // Rows a multi-row INSERT should carry: where each statement is a round
  // trip, many; where statements are calls into a library, one (a prepared
  // statement reused beats re-parsing a long one).
  virtual size_t RowsPerInsert() const { return 1; }
  // The store as error messages name it (a path, or a URI without password).
  virtual const std::string& name() const = 0;

  // Prepare + bind + run to completion.
  Status Run(const std::string& sql, const std::vector<SqlValue>& values);
};

// A transaction rolled back unless Commit() was called.
class SqlTransaction {
 public:
  explicit SqlTransaction(SqlConnection* db) : db_(db) {}
  ~SqlTransaction();
  SqlTransaction(const SqlTransaction&) = delete;
  SqlTransaction& operator=(const SqlTransaction&) = delete;
  Status Begin();
  Status Commit();

 private:
  SqlConnection* db_;
  bool open_ = false;
};

}  // namespace cohort::track

#endif  // COHORT_TRACK_SQL_CONNECTION_H_
