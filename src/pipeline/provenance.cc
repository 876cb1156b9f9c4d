// Provenance records (provenance.h): the code version read from git, the
// record in a commit, and the walks backwards and forwards.
#include "pipeline/provenance.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "cohort/data.h"
#include "common/sha256.h"

extern char** environ;

namespace cohort::pipeline {

namespace {

using nlohmann::json;

// What `git -C folder ARGS` prints, nullopt when it fails (no git, not a checkout).
std::optional<std::string> Git(const std::string& folder, std::vector<std::string> args) {
  args.insert(args.begin(), {"git", "-C", folder});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return std::nullopt;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int error = posix_spawnp(&pid, "git", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  std::string out;
  if (error == 0) {
    char buf[65536];
    for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof(buf))) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(pipe_fds[0]);
  if (error != 0) return std::nullopt;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

std::string Short(const std::string& commit) { return commit.substr(0, 12); }

std::string Describe(const json& r) {
  std::string jobs;
  for (const json& j : r.value("jobs", json::array())) {
    if (!jobs.empty()) jobs += ',';
    jobs += j.dump();
  }
  const json code = r.value("code", json::object());
  std::string text = "pipeline " + r.value("pipeline", "") + ", step " + r.value("step", "");
  const std::string git = code.value("git_commit", "");
  text += git.empty() ? std::string(", code not in git") : ", code " + Short(git);
  if (code.value("dirty", false)) text += " + diff " + Short(code.value("diff_sha256", ""));
  text += ", params " + r.value("params", json::object()).dump();
  text += ", jobs [" + jobs + "]";
  return text;
}

Status Walk(const std::string& location, const std::string& commit, int depth,
            std::set<std::string>& seen, std::vector<std::string>& lines) {
  const std::string indent(static_cast<size_t>(depth) * 2, ' ');
  auto log = data::Log(location, commit);
  if (!log.ok()) return log.status();
  const data::CommitInfo& info = log->front();
  std::optional<json> record = RecordOfCommand(info.command);
  if (!record) {
    lines.push_back(indent + location + "@" + Short(commit) + ": raw data (" + info.message + ")");
    return Status::OK();
  }
  lines.push_back(indent + location + "@" + Short(commit) + ": made by " + Describe(*record));
  if (!seen.insert(location + "@" + commit).second) return Status::OK();
  for (const json& in : record->value("inputs", json::array())) {
    COHORT_RETURN_IF_ERROR(
        Walk(in.value("location", ""), in.value("commit", ""), depth + 1, seen, lines));
  }
  return Status::OK();
}

}  // namespace

json CodeVersion(const std::string& folder) {
  json code = {{"git_commit", ""}, {"dirty", false}, {"diff_sha256", ""}};
  std::optional<std::string> head = Git(folder, {"rev-parse", "HEAD"});
  if (!head) return code;
  code["git_commit"] = head->substr(0, head->find('\n'));
  std::optional<std::string> diff = Git(folder, {"diff", "HEAD"});
  if (diff && !diff->empty()) {
    code["dirty"] = true;
    code["diff_sha256"] = DigestHex(Sha256Of(*diff));
  }
  return code;
}

std::optional<json> RecordOfCommand(const std::string& command) {
  const std::string prefix = kProvenancePrefix;
  if (command.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  json record = json::parse(command.substr(prefix.size()), nullptr, false);
  if (!record.is_object()) return std::nullopt;
  return record;
}

Result<std::vector<std::string>> Backward(const std::string& location, const std::string& ref) {
  auto commit = data::ResolveRef(location, ref);
  if (!commit.ok()) return commit.status();
  std::vector<std::string> lines;
  std::set<std::string> seen;
  COHORT_RETURN_IF_ERROR(Walk(location, *commit, 0, seen, lines));
  return lines;
}

std::vector<std::string> Forward(const std::vector<json>& records, const std::string& location,
                                 const std::string& commit) {
  std::vector<std::string> lines;
  std::set<std::string> reached = {location + "@" + commit};
  // Records are in the order they were made: one pass reaches every descendant.
  for (const json& r : records) {
    bool from_reached = false;
    for (const json& in : r.value("inputs", json::array()))
      from_reached = from_reached ||
                     reached.count(in.value("location", "") + "@" + in.value("commit", "")) > 0;
    if (!from_reached) continue;
    const std::string made = r.value("output", "") + "@" + r.value("output_commit", "");
    if (!reached.insert(made).second) continue;
    lines.push_back(r.value("output", "") + "@" + Short(r.value("output_commit", "")) + ": step " +
                    r.value("step", "") + " of pipeline " + r.value("pipeline", ""));
  }
  return lines;
}

}  // namespace cohort::pipeline
