// The PostgreSQL connection of the tracking store, through libpq: '?'
// placeholders become $N, values are sent with their types (int8, float8,
// or left for the server to infer from the column), statements run often
// are prepared once, and a dropped connection is re-opened on the next
// statement. Errors are Status naming the store by its URI without password.
#ifndef COHORT_TRACK_POSTGRES_DB_H_
#define COHORT_TRACK_POSTGRES_DB_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cohort/status.h"
#include "track/sql_connection.h"

struct pg_conn;
struct pg_result;
typedef struct pg_result PGresult;

namespace cohort::track {

class PostgresDb;

class PostgresStatement : public SqlStatement {
 public:
  PostgresStatement(PostgresDb* db, std::string sql) : db_(db), sql_(std::move(sql)) {}
  ~PostgresStatement() override;
  PostgresStatement(const PostgresStatement&) = delete;
  PostgresStatement& operator=(const PostgresStatement&) = delete;

  Status BindAll(const std::vector<SqlValue>& values) override;
  Result<bool> Step() override;  // runs the statement on the first call
  void Reset() override;

  int64_t Int(int column) const override;
  double Double(int column) const override;
  std::string Text(int column) const override;
  bool IsNull(int column) const override;

 private:
  PostgresDb* db_;
  std::string sql_;  // with $N placeholders
  std::vector<SqlValue> values_;
  pg_result* result_ = nullptr;
  int row_ = -1;
};

class PostgresDb : public SqlConnection {
 public:
  // Connects to a libpq URI (postgresql://user:password@host:port/db?...).
  static Result<std::unique_ptr<PostgresDb>> Open(const std::string& uri);
  ~PostgresDb() override;
  PostgresDb(const PostgresDb&) = delete;
  PostgresDb& operator=(const PostgresDb&) = delete;

  Result<std::unique_ptr<SqlStatement>> Prepare(const std::string& sql) override;
  Status Exec(const std::string& sql) override;
  int64_t Changes() const override { return changes_; }
  // 500 rows of 6 values: one round trip, well inside the 65535 bound values.
  size_t RowsPerInsert() const override { return 500; }
  Status Begin() override;
  Result<int> SchemaVersion() override;  // table cohort_schema_version
  Status SetSchemaVersion(int version) override;
  const std::string& name() const override { return name_; }

  // Holds a session-level advisory lock for as long as the connection
  // lives (and takes it again after a reconnect): false when another
  // session holds it.
  Result<bool> TryLock(int64_t key);

  // Runs `sql` ($N placeholders) with `values`; the caller owns the result.
  Result<pg_result*> Execute(const std::string& sql, const std::vector<SqlValue>& values);

 private:
  PostgresDb(pg_conn* conn, std::string name) : conn_(conn), name_(std::move(name)) {}
  Status Reconnect();
  // One run of `sql` (prepared the first time when there is room).
  PGresult* RunOnce(const std::string& sql, const std::string& key, int n, const unsigned* types,
                    const char* const* values);
  // Reconnects a dropped connection, unless a transaction was open on it.
  Status EnsureConnected();
  // The result's status as a Status (its SQLSTATE mapped like SQLite's errors).
  Status Check(pg_result* result, const std::string& sql);

  pg_conn* conn_;
  std::string name_;
  int64_t changes_ = 0;
  std::map<std::string, std::string> prepared_;  // SQL and types -> statement name
  std::vector<int64_t> locks_;
  bool in_transaction_ = false;
};

// "?" -> "$1", "$2", ... in order and "?N" -> "$N", outside quotes.
std::string DollarPlaceholders(const std::string& sql);

}  // namespace cohort::track

#endif  // COHORT_TRACK_POSTGRES_DB_H_
