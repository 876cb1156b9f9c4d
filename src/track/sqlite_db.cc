// The SQLite connection and its statements.
#include "track/sqlite_db.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace cohort::track {
namespace {

Status SqlError(sqlite3* db, const std::string& what) {
  return Status::IoError("sqlite: " + what + ": " + sqlite3_errmsg(db));
}

// The first line of /proc/PID/cmdline, arguments separated by spaces.
std::string CommandLineOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text;
}

// The name under which process `pid` has the file `st` describes open
// (its /proc/PID/fd entry); empty when it has not, or it cannot be read.
std::string OpenedNameOf(pid_t pid, const struct stat& st) {
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  DIR* dir = opendir(fds.c_str());
  if (dir == nullptr) return "";
  std::string name;
  while (struct dirent* e = readdir(dir)) {
    const std::string entry = fds + "/" + e->d_name;
    struct stat target;
    if (e->d_name[0] == '.' || stat(entry.c_str(), &target) != 0 || target.st_dev != st.st_dev ||
        target.st_ino != st.st_ino) {
      continue;
    }
    char link[PATH_MAX];
    const ssize_t n = readlink(entry.c_str(), link, sizeof(link) - 1);
    if (n > 0) name.assign(link, static_cast<size_t>(n));
    break;
  }
  closedir(dir);
  return name;
}

// The process holding a flock on the file `st` describes, and the name it
// opened it by, from /proc/locks ("1: FLOCK  ADVISORY  WRITE 4711
// 08:01:1234 0 EOF"; "->" marks waiters). The device there is the
// superblock's, which stat() does not always give (btrfs subvolumes,
// overlayfs), so a line is matched by inode and confirmed by the holder
// having the file open. pid 0 when none is found (another PID namespace).
pid_t FlockHolder(const struct stat& st, std::string* opened_as) {
  std::ifstream locks("/proc/locks");
  const std::string inode = ":" + std::to_string(static_cast<uintmax_t>(st.st_ino));
  for (std::string line; std::getline(locks, line);) {
    std::istringstream fields(line);
    std::string number, kind, mode, access, pid_text, file;
    fields >> number >> kind;
    if (kind != "FLOCK") continue;  // also skips "->" waiters
    fields >> mode >> access >> pid_text >> file;
    if (file.size() <= inode.size() ||
        file.compare(file.size() - inode.size(), inode.size(), inode) != 0) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::atol(pid_text.c_str()));
    *opened_as = OpenedNameOf(pid, st);
    if (!opened_as->empty()) return pid;
  }
  return 0;
}

// Who holds the store file `st` describes, for the refusal's message.
std::string DescribeHolder(const struct stat& st) {
  std::string name;
  const pid_t pid = FlockHolder(st, &name);
  if (pid == 0) return " (another process holds its lock)";
  std::string text = ": pid " + std::to_string(pid);
  const std::string command = CommandLineOf(pid);
  if (!command.empty()) text += " (" + command + ")";
  return text + " holds it as " + name;
}

// One process owns a store file: an exclusive flock on the file itself (not
// on a name beside it), held while the connection is open. flock locks the
// inode through the open file, so every name of the file, a symlink or a hard
// link, meets the same lock; a lock file named after the path would not, and
// two writers on one database through two names write two WALs and lose
// commits. Independent of SQLite's own fcntl locks on the file.
Result<int> ClaimStoreFile(const std::string& path, const std::string& advice) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IoError("cannot open tracking store " + path + ": " + std::strerror(errno));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
  const int error = errno;
  struct stat st;
  const bool known = fstat(fd, &st) == 0;
  close(fd);  // before looking for the holder's descriptors: not one of them
  if (error != EWOULDBLOCK) {
    return Status::IoError("cannot lock tracking store " + path + ": " + std::strerror(error));
  }
  return Status::AlreadyExists("tracking store " + path + " is open in another process" +
                               (known ? DescribeHolder(st) : std::string()) + "; " + advice);
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
    return Status::AlreadyExists(std::string("constraint: ") + sqlite3_errmsg(db_));
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

Result<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path,
                                                 const std::string& advice) {
  Result<int> fd = ClaimStoreFile(path, advice);
  if (!fd.ok()) return fd.status();
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    close(*fd);
    return Status::IoError("cannot open tracking store " + path + ": " + message);
  }
  std::unique_ptr<SqliteDb> out(new SqliteDb(db, path, *fd));
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
  // Only now: closing any descriptor of the file drops the POSIX locks this
  // process holds on it, SQLite's included.
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
