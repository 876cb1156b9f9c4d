// The SQLite connection and its statements.
#include "track/sqlite_db.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "track/errors.h"

namespace cohort::track {
namespace {

Status SqlError(sqlite3* db, const std::string& what) {
  return Status::IoError("sqlite: " + what + ": " + sqlite3_errmsg(db));
}

}  // namespace

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

Status SqliteStatement::Bind(int index, const SqlValue& value) {
  int rc = SQLITE_OK;
  if (std::holds_alternative<std::nullptr_t>(value)) {
    rc = sqlite3_bind_null(stmt_, index);
  } else if (auto* i = std::get_if<int64_t>(&value)) {
    rc = sqlite3_bind_int64(stmt_, index, *i);
  } else if (auto* d = std::get_if<double>(&value)) {
    rc = sqlite3_bind_double(stmt_, index, *d);
  } else {
    const std::string& s = std::get<std::string>(value);
    rc = sqlite3_bind_text64(stmt_, index, s.data(), s.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  }
  if (rc != SQLITE_OK) return SqlError(db_, "binding value " + std::to_string(index));
  return Status::OK();
}

Status SqliteStatement::BindAll(const std::vector<SqlValue>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    COHORT_RETURN_IF_ERROR(Bind(static_cast<int>(i + 1), values[i]));
  }
  return Status::OK();
}

Result<bool> SqliteStatement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  if (rc == SQLITE_CONSTRAINT) {
    return AlreadyExistsError(std::string("constraint: ") + sqlite3_errmsg(db_));
  }
  return SqlError(db_, std::string("running ") + sqlite3_sql(stmt_));
}

void SqliteStatement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t SqliteStatement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }
double SqliteStatement::Double(int column) const { return sqlite3_column_double(stmt_, column); }
bool SqliteStatement::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
std::string SqliteStatement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path) {
  // One process owns a store file: an exclusive lock on PATH.lock, held
  // while the connection is open.
  std::string lock_path = path + ".lock";
  int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IoError("cannot create lock file " + lock_path + ": " + std::strerror(errno));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return AlreadyExistsError("tracking store " + path + " is open in another process (lock " +
                              lock_path + " is held); use that server, or another --store");
  }
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    close(fd);
    return Status::IoError("cannot open tracking store " + path + ": " + message);
  }
  std::unique_ptr<SqliteDb> out(new SqliteDb(db, path, fd));
  sqlite3_busy_timeout(db, 5000);
  // WAL: readers never block the writer; synchronous=FULL: a commit is on
  // disk before it returns, so an acknowledged batch survives kill -9 and
  // power loss.
  Status s = out->Exec(
      "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; "
      "PRAGMA case_sensitive_like=ON;");
  if (!s.ok()) return s.WithContext("opening tracking store " + path);
  return out;
}

SqliteDb::~SqliteDb() {
  sqlite3_close(db_);
  close(lock_fd_);  // releases the flock
}

Result<std::unique_ptr<SqlStatement>> SqliteDb::Prepare(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr) !=
      SQLITE_OK) {
    return SqlError(db_, "preparing " + sql);
  }
  return std::unique_ptr<SqlStatement>(std::make_unique<SqliteStatement>(db_, stmt));
}

Status SqliteDb::Exec(const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    return Status::IoError("sqlite: " + message);
  }
  return Status::OK();
}

int64_t SqliteDb::Changes() const { return sqlite3_changes64(db_); }

Status SqliteDb::Begin() { return Exec("BEGIN IMMEDIATE"); }

Result<int> SqliteDb::SchemaVersion() {
  auto stmt = Prepare("PRAGMA user_version");
  if (!stmt.ok()) return stmt.status();
  auto row = (*stmt)->Step();
  if (!row.ok()) return row.status();
  return static_cast<int>((*stmt)->Int(0));
}

Status SqliteDb::SetSchemaVersion(int version) {
  return Exec("PRAGMA user_version = " + std::to_string(version));
}

}  // namespace cohort::track
