// The PostgreSQL connection and its statements, through libpq.
#include "track/postgres_db.h"

#include <libpq-fe.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "track/store.h"

namespace cohort::track {
namespace {

// Type OIDs of the values sent with a type (pg_type.h is server-side only).
constexpr Oid kInt8Oid = 20;
constexpr Oid kFloat8Oid = 701;
// Statements prepared per connection at most: the store's fixed SQL is a few
// dozen; search SQL varies with its filter and runs unprepared past this.
constexpr size_t kMaxPrepared = 256;

std::string Trimmed(const char* message) {
  std::string s = message ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  return s;
}

// A value in PostgreSQL's text format, and the type it is sent as (0: the
// server infers it from where the placeholder stands).
std::string ValueText(const SqlValue& value, Oid* type) {
  *type = 0;
  if (auto* i = std::get_if<int64_t>(&value)) {
    *type = kInt8Oid;
    return std::to_string(*i);
  }
  if (auto* d = std::get_if<double>(&value)) {
    *type = kFloat8Oid;
    if (std::isnan(*d)) return "NaN";
    if (std::isinf(*d)) return *d > 0 ? "Infinity" : "-Infinity";
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.17g", *d);
    return buf;
  }
  if (auto* s = std::get_if<std::string>(&value)) return *s;
  return "";
}

}  // namespace

std::string DollarPlaceholders(const std::string& sql) {
  std::string out;
  int next = 0;
  char quote = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    char c = sql[i];
    if (quote) {
      if (c == quote) quote = 0;
      out += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      out += c;
    } else if (c == '?') {
      size_t j = i + 1;
      while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9') ++j;
      out += '$';
      out += j > i + 1 ? sql.substr(i + 1, j - i - 1) : std::to_string(++next);
      i = j - 1;
    } else {
      out += c;
    }
  }
  return out;
}

PostgresStatement::~PostgresStatement() { PQclear(result_); }

Status PostgresStatement::BindAll(const std::vector<SqlValue>& values) {
  for (const SqlValue& v : values) {
    auto* s = std::get_if<std::string>(&v);
    // libpq sends text values as C strings: a NUL would cut the value short.
    if (s && s->find('\0') != std::string::npos) {
      return Status::InvalidArgument("a value contains a NUL byte, which " + db_->name() +
                                     " (PostgreSQL) cannot store");
    }
  }
  values_ = values;
  return Status::OK();
}

Result<bool> PostgresStatement::Step() {
  if (result_ == nullptr) {
    auto result = db_->Execute(sql_, values_);
    if (!result.ok()) return result.status();
    result_ = *result;
    row_ = -1;
  }
  return ++row_ < PQntuples(result_);
}

void PostgresStatement::Reset() {
  PQclear(result_);
  result_ = nullptr;
  values_.clear();
}

int64_t PostgresStatement::Int(int column) const {
  return std::strtoll(PQgetvalue(result_, row_, column), nullptr, 10);
}
double PostgresStatement::Double(int column) const {
  return std::strtod(PQgetvalue(result_, row_, column), nullptr);
}
std::string PostgresStatement::Text(int column) const {
  return std::string(PQgetvalue(result_, row_, column),
                     static_cast<size_t>(PQgetlength(result_, row_, column)));
}
bool PostgresStatement::IsNull(int column) const { return PQgetisnull(result_, row_, column); }

Result<std::unique_ptr<PostgresDb>> PostgresDb::Open(const std::string& uri) {
  std::string name = RedactStoreUri(uri);
  // A URI's own connect_timeout wins over this default (later keys win).
  const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* values[] = {"10", "cohort server", uri.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn == nullptr) return Status::IoError("cannot connect to tracking store " + name);
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = Trimmed(PQerrorMessage(conn));
    PQfinish(conn);
    // libpq quotes a URI it cannot parse, password included.
    for (size_t at = message.find(uri); at != std::string::npos; at = message.find(uri, at)) {
      message.replace(at, uri.size(), name);
      at += name.size();
    }
    return Status::IoError("cannot connect to tracking store " + name + ": " + message);
  }
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);  // "already exists, skipping"
  std::unique_ptr<PostgresDb> db(new PostgresDb(conn, name));
  COHORT_RETURN_IF_ERROR(db->Exec("SET client_encoding = 'UTF8'; SET synchronous_commit = on"));
  return db;
}

PostgresDb::~PostgresDb() { PQfinish(conn_); }

Status PostgresDb::Reconnect() {
  PQreset(conn_);
  prepared_.clear();  // prepared statements died with the old session
  if (PQstatus(conn_) != CONNECTION_OK) {
    return Status::IoError("lost the connection to tracking store " + name_ + ": " +
                           Trimmed(PQerrorMessage(conn_)));
  }
  std::vector<int64_t> held;
  held.swap(locks_);
  for (int64_t key : held) {
    auto locked = TryLock(key);
    if (!locked.ok()) return locked.status();
    if (!*locked) {
      return Status::AlreadyExists(
          "tracking store " + name_ +
          " was taken by another cohort server while the connection was down");
    }
  }
  return Exec("SET client_encoding = 'UTF8'; SET synchronous_commit = on");
}

Status PostgresDb::Check(PGresult* result, const std::string& sql) {
  ExecStatusType status = PQresultStatus(result);
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return Status::OK();
  std::string message = Trimmed(PQresultErrorMessage(result));
  if (message.empty()) message = Trimmed(PQerrorMessage(conn_));
  const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
  std::string sqlstate = state ? state : "";
  if (sqlstate.rfind("23", 0) == 0) return Status::AlreadyExists("constraint: " + message);
  if (sqlstate.rfind("22", 0) == 0) {
    return Status::InvalidArgument("tracking store " + name_ + " refused a value: " + message);
  }
  // A 500-row INSERT is ~15 kB of placeholders: its head names it well enough.
  std::string shown = sql.size() > 200 ? sql.substr(0, 200) + "..." : sql;
  return Status::IoError("postgresql " + name_ + ": running " + shown + ": " + message);
}

Status PostgresDb::EnsureConnected() {
  if (PQstatus(conn_) == CONNECTION_OK) return Status::OK();
  // Statements after the drop must not run outside the transaction they
  // belong to: the caller fails and rolls back; the next one reconnects.
  if (in_transaction_) {
    return Status::IoError("lost the connection to tracking store " + name_ +
                           " inside a transaction; nothing of it was committed");
  }
  return Reconnect();
}

PGresult* PostgresDb::RunOnce(const std::string& sql, const std::string& key, int n,
                              const Oid* types, const char* const* values) {
  auto found = prepared_.find(key);
  if (found == prepared_.end() && prepared_.size() < kMaxPrepared) {
    std::string statement = "cohort_" + std::to_string(prepared_.size());
    PGresult* prepared = PQprepare(conn_, statement.c_str(), sql.c_str(), n, types);
    if (PQresultStatus(prepared) != PGRES_COMMAND_OK) return prepared;
    PQclear(prepared);
    found = prepared_.emplace(key, statement).first;
  }
  if (found != prepared_.end()) {
    return PQexecPrepared(conn_, found->second.c_str(), n, values, nullptr, nullptr, 0);
  }
  return PQexecParams(conn_, sql.c_str(), n, types, values, nullptr, nullptr, 0);
}

Result<PGresult*> PostgresDb::Execute(const std::string& sql, const std::vector<SqlValue>& values) {
  COHORT_RETURN_IF_ERROR(EnsureConnected());
  std::vector<std::string> texts(values.size());
  std::vector<const char*> pointers(values.size());
  std::vector<Oid> types(values.size());
  std::string key = sql + '\x01';
  for (size_t i = 0; i < values.size(); ++i) {
    texts[i] = ValueText(values[i], &types[i]);
    bool null = std::holds_alternative<std::nullptr_t>(values[i]);
    pointers[i] = null ? nullptr : texts[i].c_str();
    key += std::to_string(types[i]) + ",";
  }
  int n = static_cast<int>(values.size());
  PGresult* result = RunOnce(sql, key, n, types.data(), pointers.data());
  // A dropped session shows on the first statement after it: a read outside
  // a transaction is safe to run again on a new one.
  if (PQstatus(conn_) != CONNECTION_OK && !in_transaction_ && sql.rfind("SELECT", 0) == 0) {
    PQclear(result);
    COHORT_RETURN_IF_ERROR(Reconnect());
    result = RunOnce(sql, key, n, types.data(), pointers.data());
  }
  Status s = Check(result, sql);
  if (!s.ok()) {
    PQclear(result);
    return s;
  }
  changes_ = std::strtoll(PQcmdTuples(result), nullptr, 10);
  return result;
}

Result<std::unique_ptr<SqlStatement>> PostgresDb::Prepare(const std::string& sql) {
  return std::unique_ptr<SqlStatement>(
      std::make_unique<PostgresStatement>(this, DollarPlaceholders(sql)));
}

Status PostgresDb::Exec(const std::string& sql) {
  bool ends_transaction = sql == "COMMIT" || sql == "ROLLBACK";
  if (ends_transaction && PQstatus(conn_) != CONNECTION_OK) {
    in_transaction_ = false;  // the server rolled it back when the session died
    if (sql == "ROLLBACK") return Status::OK();
    return Status::IoError("lost the connection to tracking store " + name_ +
                           " before COMMIT; nothing of the transaction was committed");
  }
  if (ends_transaction) in_transaction_ = false;
  COHORT_RETURN_IF_ERROR(EnsureConnected());
  PGresult* result = PQexec(conn_, sql.c_str());
  if (sql == "BEGIN" && PQstatus(conn_) != CONNECTION_OK) {  // nothing ran: start on a new session
    PQclear(result);
    COHORT_RETURN_IF_ERROR(Reconnect());
    result = PQexec(conn_, sql.c_str());
  }
  Status s = Check(result, sql);
  PQclear(result);
  return s;
}

Status PostgresDb::Begin() {
  COHORT_RETURN_IF_ERROR(Exec("BEGIN"));
  in_transaction_ = true;
  return Status::OK();
}

Result<int> PostgresDb::SchemaVersion() {
  COHORT_RETURN_IF_ERROR(
      Exec("CREATE TABLE IF NOT EXISTS cohort_schema_version (version INTEGER NOT NULL)"));
  auto result = Execute("SELECT max(version) FROM cohort_schema_version", {});
  if (!result.ok()) return result.status();
  int version = PQgetisnull(*result, 0, 0) ? 0 : std::atoi(PQgetvalue(*result, 0, 0));
  PQclear(*result);
  return version;
}

Status PostgresDb::SetSchemaVersion(int version) {
  return Exec("DELETE FROM cohort_schema_version; INSERT INTO cohort_schema_version VALUES (" +
              std::to_string(version) + ")");
}

Result<bool> PostgresDb::TryLock(int64_t key) {
  auto result = Execute("SELECT pg_try_advisory_lock($1)", {key});
  if (!result.ok()) return result.status();
  bool locked = std::string(PQgetvalue(*result, 0, 0)) == "t";
  PQclear(*result);
  if (locked) locks_.push_back(key);
  return locked;
}

}  // namespace cohort::track
