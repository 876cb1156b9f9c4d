// The queue token's file, the servers' records and how a client finds its
// server's token.
#include "queue/queue_token.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/settings.h"
#include "launch/process_util.h"
#include "net/auth.h"

namespace cohort::queue {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kTokenPrefix[] = "cohort_queue_";
constexpr char kRecordPrefix[] = "server-";

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

bool Alive(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

// The host and port of "http://HOST:PORT/..." ("[::1]" as "::1"); port 80
// when the URL names none, -1 when it is not such a URL.
std::pair<std::string, int> HostAndPort(const std::string& url) {
  std::string rest = url;
  for (const char* scheme : {"http://", "https://"}) {
    if (rest.rfind(scheme, 0) == 0) rest = rest.substr(std::string(scheme).size());
  }
  rest = rest.substr(0, rest.find('/'));
  std::string host = rest, port;
  if (!rest.empty() && rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string::npos) return {"", -1};
    host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') port = rest.substr(close + 2);
  } else if (size_t colon = rest.rfind(':'); colon != std::string::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (port.empty()) return {host, 80};
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) {
    return {"", -1};
  }
  return {host, std::stoi(port)};
}

bool Loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// Whether a client's `url_host` reaches a server listening on `listen_host`
// of this machine.
bool Reaches(const std::string& url_host, const std::string& listen_host) {
  if (url_host == listen_host) return true;
  bool wildcard = listen_host.empty() || listen_host == "0.0.0.0" || listen_host == "::";
  return Loopback(url_host) && (Loopback(listen_host) || wildcard);
}

// Writes `text` to `path` (mode 0600) through a temporary file and a rename.
Status WritePrivately(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd.valid()) return Status::IoError("cannot create " + tmp + ": " + ErrnoText(errno));
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::fsync(fd.get()) != 0) {
    Status failed = Status::IoError("cannot write " + tmp + ": " + ErrnoText(errno));
    ::unlink(tmp.c_str());
    return failed;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status failed = Status::IoError("cannot rename " + tmp + ": " + ErrnoText(errno));
    ::unlink(tmp.c_str());
    return failed;
  }
  return Status::OK();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string QueueTokenPath(const std::string& db_path) {
  return (fs::path(db_path).parent_path() / "queue-token").string();
}

Result<std::string> LoadOrCreateQueueToken(const std::string& path) {
  Fd created(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (created.valid()) {
    std::string token = kTokenPrefix + GenerateSecret() + "\n";
    if (::write(created.get(), token.data(), token.size()) != static_cast<ssize_t>(token.size()) ||
        ::fsync(created.get()) != 0) {
      Status failed =
          Status::IoError("cannot write the queue token " + path + ": " + ErrnoText(errno));
      ::unlink(path.c_str());
      return failed;
    }
    return Trimmed(token);
  }
  if (errno != EEXIST) {
    return Status::IoError("cannot create the queue token " + path + ": " + ErrnoText(errno));
  }
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) {
    return Status::IoError("cannot read the queue token " + path + ": " + ErrnoText(errno));
  }
  if ((info.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%o", static_cast<unsigned>(info.st_mode & 0777));
    return Status::InvalidArgument("the queue token " + path +
                                   " may be read by other users (mode " + mode + "): chmod 600 it");
  }
  std::string token = Trimmed(ReadFile(path));
  if (token.rfind(kTokenPrefix, 0) != 0 || token.size() != std::string(kTokenPrefix).size() + 64) {
    return Status::InvalidArgument("the queue token " + path +
                                   " holds no token: remove it, and a new one is made");
  }
  return token;
}

std::string QueueRuntimeDir() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && *runtime != '\0') return (fs::path(runtime) / "cohort").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home != nullptr ? home : "") / ".cohort" / "run").string();
}

Result<std::string> PublishQueueToken(const std::string& host, int port, const std::string& token,
                                      const std::string& token_path) {
  const std::string dir = QueueRuntimeDir();
  std::error_code error;
  fs::create_directories(dir, error);
  if (error || ::chmod(dir.c_str(), 0700) != 0) {
    return Status::IoError("cannot create the runtime directory " + dir + ": " +
                           (error ? error.message() : ErrnoText(errno)));
  }
  // Records of servers that are gone (killed, say) only mislead.
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(kRecordPrefix, 0) != 0) continue;
    json record = json::parse(ReadFile(entry.path().string()), nullptr, false);
    if (record.is_object() && record.value("pid", 0) > 0 && !Alive(record.value("pid", 0))) {
      fs::remove(entry.path(), error);
    }
  }
  const std::string path =
      (fs::path(dir) / (kRecordPrefix + std::to_string(::getpid()) + ".json")).string();
  json record = {
      {"url", "http://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                  std::to_string(port)},
      {"host", host},
      {"port", port},
      {"pid", static_cast<int>(::getpid())},
      {"queue_token", token},
      {"token_file", token_path}};
  COHORT_RETURN_IF_ERROR(WritePrivately(path, record.dump(2) + "\n"));
  return path;
}

std::string FindQueueToken(const std::string& server_url) {
  auto variable = ReadSetting(ProcessEnv(), "COHORT_QUEUE_TOKEN");
  if (variable.ok() && !variable->text.empty()) return variable->text;
  auto [host, port] = HostAndPort(server_url);
  if (port < 0) return "";
  std::error_code error;
  std::string found;
  fs::file_time_type newest;
  for (const auto& entry : fs::directory_iterator(QueueRuntimeDir(), error)) {
    if (entry.path().filename().string().rfind(kRecordPrefix, 0) != 0) continue;
    json record = json::parse(ReadFile(entry.path().string()), nullptr, false);
    if (!record.is_object() || record.value("port", -1) != port ||
        !Reaches(host, record.value("host", std::string("-"))) || !Alive(record.value("pid", 0))) {
      continue;
    }
    auto written = entry.last_write_time(error);
    if (found.empty() || written > newest) {
      found = record.value("queue_token", std::string());
      newest = written;
    }
  }
  return found;
}

}  // namespace cohort::queue
