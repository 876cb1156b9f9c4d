// The controller's state folder (state.h).
#include "pipeline/state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

namespace cohort::pipeline {

namespace {

Status Errno(const std::string& what) {
  return Status::IoError(what + ": " + std::strerror(errno));
}

Status AppendLine(const std::string& path, const std::string& line) {
  std::ofstream out(path, std::ios::app);
  out << line << "\n";
  out.flush();
  if (!out) return Status::IoError("cannot append to " + path);
  return Status::OK();
}

}  // namespace

Status MakeFolders(const std::string& path) {
  for (size_t at = 1; at != std::string::npos;) {
    at = path.find('/', at + 1);
    std::string prefix = path.substr(0, at);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return Errno("mkdir " + prefix);
  }
  return Status::OK();
}

Status WriteFileAtomically(const std::string& path, const std::string& bytes) {
  COHORT_RETURN_IF_ERROR(MakeFolders(path.substr(0, path.rfind('/'))));
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("open " + tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return Errno("write " + tmp);
    }
    done += static_cast<size_t>(n);
  }
  // fsync: a state that names finished work must not come back older after a crash.
  if (::fsync(fd) != 0 || ::close(fd) != 0) return Errno("write " + tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Errno("rename " + tmp);
  return Status::OK();
}

PipelineState::~PipelineState() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status PipelineState::Open() {
  COHORT_RETURN_IF_ERROR(MakeFolders(folder_));
  const std::string lock = folder_ + "/lock";
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) return Errno("open " + lock);
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    int holder = LockHolder();
    ::close(lock_fd_);
    lock_fd_ = -1;
    return Status::InvalidArgument("the pipeline's controller is already running (pid " +
                                   std::to_string(holder) + ", state " + folder_ + ")");
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, pid.data(), pid.size(), 0) < 0)
    return Errno("write " + lock);
  return Read();
}

int PipelineState::LockHolder() const {
  std::ifstream in(folder_ + "/lock");
  int pid = 0;
  in >> pid;
  if (pid <= 0) return 0;
  int fd = ::open((folder_ + "/lock").c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return 0;
  // Held by someone (not this process's own descriptor): the pid is live.
  bool free = lock_fd_ < 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return free ? 0 : pid;
}

Status PipelineState::Read() {
  recent_outputs_.clear();
  for (const nlohmann::json& record : ProvenanceRecords()) KeepRecentOutput(record);
  std::ifstream in(folder_ + "/state.json");
  if (!in) {
    json_ = nlohmann::json::object();
    return Status::OK();
  }
  json_ = nlohmann::json::parse(in, nullptr, false);
  if (!json_.is_object())
    return Status::IoError(folder_ + "/state.json is not a JSON object (damaged?)");
  return Status::OK();
}

Status PipelineState::Save() const {
  return WriteFileAtomically(folder_ + "/state.json", json_.dump(1));
}

Status PipelineState::AppendProvenance(const nlohmann::json& record) {
  COHORT_RETURN_IF_ERROR(AppendLine(folder_ + "/provenance.jsonl", record.dump()));
  KeepRecentOutput(record);
  return Status::OK();
}

std::vector<nlohmann::json> PipelineState::ProvenanceRecords() const {
  std::vector<nlohmann::json> records;
  std::ifstream in(folder_ + "/provenance.jsonl");
  for (std::string line; std::getline(in, line);) {
    nlohmann::json r = nlohmann::json::parse(line, nullptr, false);
    if (r.is_object()) records.push_back(std::move(r));
  }
  return records;
}

// A step without an output dataset made no commit; a step whose run changed
// nothing names its earlier commit again, and the later record replaces it.
void PipelineState::KeepRecentOutput(const nlohmann::json& record) {
  const std::string output = record.value("output", "");
  const std::string commit = record.value("output_commit", "");
  if (output.empty() || commit.empty()) return;
  for (auto it = recent_outputs_.begin(); it != recent_outputs_.end(); ++it) {
    if (it->value("output", "") == output && it->value("output_commit", "") == commit) {
      recent_outputs_.erase(it);
      break;
    }
  }
  recent_outputs_.push_back(record);
  if (recent_outputs_.size() > kRecentOutputRecords) recent_outputs_.pop_front();
}

Status PipelineState::AppendLog(const std::string& line) const {
  char stamp[32];
  time_t now = std::time(nullptr);
  struct tm utc;
  gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return AppendLine(folder_ + "/log.txt", std::string(stamp) + " " + line);
}

}  // namespace cohort::pipeline
