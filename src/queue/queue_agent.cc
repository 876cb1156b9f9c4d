// The agent's heartbeat loop and its jobs.
#include "queue/queue_agent.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/self_executable.h"
#include "queue/job_process.h"
#include "queue/job_record.h"

namespace cohort::queue {
namespace {

using nlohmann::json;

constexpr size_t kMaxLogChunk = 1 << 20;
// Between heartbeats while jobs run: how soon an exit is noticed.
constexpr double kBusyWaitS = 0.1;

std::vector<std::string> Strings(const json& list) {
  std::vector<std::string> out;
  if (!list.is_array()) return out;
  for (const json& item : list) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace

std::string QueueAgent::LocalPath(uint64_t id, const char* suffix) const {
  return options_.work_dir + "/" + std::to_string(id) + suffix;
}

Status QueueAgent::Run(const std::function<bool()>& stop) {
  std::error_code error;
  std::filesystem::create_directories(options_.work_dir, error);
  if (error) {
    return Status::IoError("cannot create the agent's work directory " + options_.work_dir + ": " +
                           error.message());
  }
  while (!stop()) {
    Status s = Beat();
    // Refused (no credential, a revoked one): retrying cannot help.
    if (s.code() == Status::Code::kUnauthenticated) return s;
    if (!s.ok()) {
      // The server may be restarting: jobs go on, heartbeats resume.
      if (!reported_failure_) std::fprintf(stderr, "cohort agent: %s\n", s.message().c_str());
      reported_failure_ = true;
      std::this_thread::sleep_for(std::chrono::duration<double>(options_.heartbeat_s));
    } else {
      reported_failure_ = false;
    }
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {  // wrappers that ended
    }
    for (auto it = held_.begin(); it != held_.end();) {
      it = Follow(it->first, &it->second) ? held_.erase(it) : std::next(it);
    }
  }
  return Status::OK();
}

Status QueueAgent::Beat() {
  json running = json::array();
  for (const auto& [id, held] : held_) running.push_back(id);
  double wait = held_.empty() ? options_.heartbeat_s : std::min(options_.heartbeat_s, kBusyWaitS);
  auto answer =
      client_->Post("agents/" + options_.name + "/heartbeat", {{"address", options_.address},
                                                               {"pool", options_.pool},
                                                               {"slots", options_.slots},
                                                               {"running", running},
                                                               {"wait_s", wait}});
  if (!answer.ok()) return answer.status();
  if (answer->status == 401 || answer->status == 403) {
    return Status::Unauthenticated(answer->ErrorMessage());
  }
  if (answer->status != 200) return Status::InvalidArgument(answer->ErrorMessage());
  json work = json::parse(answer->body, nullptr, false);
  if (!work.is_object()) return Status::InvalidArgument("the heartbeat's answer is not JSON");
  for (const json& job : work.value("start", json::array())) {
    Status s = Start(job);
    if (!s.ok()) std::fprintf(stderr, "cohort agent: %s\n", s.message().c_str());
  }
  for (const json& signal : work.value("signal", json::array())) {
    auto it = held_.find(signal.value("id", uint64_t{0}));
    const int sig = signal.value("signal", SIGTERM);
    if (it == held_.end() || it->second.signalled == sig) continue;
    it->second.signalled = sig;
    SignalJob(it->second.pgid, sig);
  }
  for (const json& id : work.value("drop", json::array())) {
    auto it = id.is_number_unsigned() ? held_.find(id.get<uint64_t>()) : held_.end();
    if (it == held_.end()) continue;
    SignalJob(it->second.pgid, SIGKILL);
    held_.erase(it);
  }
  return Status::OK();
}

Status QueueAgent::Start(const json& job) {
  uint64_t id = job.value("id", uint64_t{0});
  if (id == 0 || held_.count(id) > 0) return Status::OK();
  JobLaunch launch;
  launch.command = Strings(job.value("command", json::array()));
  std::string hosts = job.value("hosts", std::string());
  if (!hosts.empty()) {
    // The gang's other hosts: `cohort run` starts their ranks over ssh.
    int slots = 0;
    for (const auto& [host, n] : ParsePlacement(hosts)) slots += n;
    std::vector<std::string> run = {CohortBinary(), "run", "-np", std::to_string(slots),
                                    "-H",           hosts, "--"};
    launch.command.insert(launch.command.begin(), run.begin(), run.end());
  }
  launch.env = Strings(job.value("env", json::array()));
  launch.cwd = job.value("cwd", std::string());
  launch.log_path = LocalPath(id, ".log");
  launch.exit_path = LocalPath(id, ".exit");
  launch.tied_to_starter = true;
  std::filesystem::remove(launch.log_path);
  Held held;
  held.log_base = job.value("log_offset", uint64_t{0});
  auto process = StartJob(launch);
  if (!process.ok()) {
    // Reported as the job's end, with the reason in its log.
    std::ofstream(launch.log_path)
        << "cohort agent " << options_.name
        << ": cannot start the job: " << process.status().message() << "\n";
    std::ofstream(launch.exit_path) << "exit 127\n";
  } else {
    held.wrapper_pid = process->wrapper_pid;
    held.wrapper_start = process->wrapper_start;
    held.pgid = process->job_pgid;
  }
  held_[id] = held;
  return Status::OK();
}

void QueueAgent::ShipLog(uint64_t id, Held* held) {
  std::ifstream in(LocalPath(id, ".log"), std::ios::binary);
  if (!in) return;
  while (true) {
    in.seekg(static_cast<std::streamoff>(held->sent));
    std::string bytes(kMaxLogChunk, '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    bytes.resize(static_cast<size_t>(in.gcount()));
    in.clear();
    if (bytes.empty()) return;
    size_t n = bytes.size();
    auto answer =
        client_->PostBytes("agents/" + options_.name + "/jobs/" + std::to_string(id) +
                               "/log?offset=" + std::to_string(held->log_base + held->sent),
                           std::move(bytes));
    if (!answer.ok() || answer->status != 200) return;  // again at the next heartbeat
    held->sent += n;
  }
}

bool QueueAgent::Follow(uint64_t id, Held* held) {
  ShipLog(id, held);
  auto code = ReadExitFile(LocalPath(id, ".exit"));
  if (!code && held->pgid != 0 && !WrapperAlive(held->wrapper_pid, held->wrapper_start)) {
    code = ReadExitFile(LocalPath(id, ".exit"));
    if (!code) code = 128 + SIGKILL;  // the wrapper was killed before it could write
  }
  if (!code) return false;
  ShipLog(id, held);
  auto answer = client_->Post("agents/" + options_.name + "/jobs/" + std::to_string(id) + "/exit",
                              {{"exit_code", *code}});
  // 403: the job is no longer this agent's (requeued meanwhile): forget it.
  if (!answer.ok() || (answer->status != 200 && answer->status != 403)) {
    return false;  // again at the next heartbeat
  }
  std::filesystem::remove(LocalPath(id, ".log"));
  std::filesystem::remove(LocalPath(id, ".exit"));
  return true;
}

}  // namespace cohort::queue
