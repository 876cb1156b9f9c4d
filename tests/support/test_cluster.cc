// TestCluster implementation: drives tools/cluster through ChildProcess.
#include "support/test_cluster.h"

#include <dirent.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

#include "support/child_process.h"

namespace cohort::testing {

namespace {

constexpr const char* kIp = "/usr/sbin/ip";
constexpr const char* kSshd = "/usr/sbin/sshd";
constexpr double kScriptSeconds = 60;

Finished RunScript(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/bin/bash", ClusterScript()};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess script(argv);
  return script.Finish(Deadline::AfterSeconds(kScriptSeconds));
}

}  // namespace

std::string ClusterScript() { return std::string(COHORT_SOURCE_DIR) + "/tools/cluster"; }

std::string UniqueToken() {
  std::random_device random;
  return std::to_string(::getpid()) + "-" + std::to_string(random());
}

std::string TestCluster::Unsupported() {
  if (::geteuid() != 0) return "needs root (it creates network namespaces)";
  if (::access(kIp, X_OK) != 0) return std::string("needs ") + kIp + " (iproute2)";
  if (::access(kSshd, X_OK) != 0) return std::string("needs ") + kSshd + " (openssh-server)";
  // Namespaces can be forbidden even to root (a restricted container).
  const std::string probe = "cohort-probe-" + std::to_string(::getpid());
  ChildProcess add({kIp, "netns", "add", probe});
  Finished added = add.Finish(Deadline::AfterSeconds(10));
  if (added.exit_code != 0) return "`ip netns add` fails here: " + added.err;
  ChildProcess del({kIp, "netns", "del", probe});
  del.Finish(Deadline::AfterSeconds(10));
  return "";
}

std::unique_ptr<TestCluster> TestCluster::Up(int hosts, const std::string& rate) {
  std::unique_ptr<TestCluster> cluster(new TestCluster());
  const int pid = static_cast<int>(::getpid());
  cluster->name_ = "mt" + std::to_string(pid % 1000000);
  cluster->state_dir_ = "/tmp/cohort-test-cluster-" + cluster->name_;
  // Another test (or person) may hold a subnet: try a few.
  for (int attempt = 0; attempt < 8; ++attempt) {
    cluster->subnet_ = "10.77." + std::to_string(1 + (pid + attempt * 37) % 250);
    Finished up =
        RunScript({"up", "--hosts", std::to_string(hosts), "--rate", rate, "--name", cluster->name_,
                   "--subnet", cluster->subnet_, "--state-dir", cluster->state_dir_});
    if (up.exit_code == 0) {
      cluster->up_ = true;
      return cluster;
    }
    if (!Contains(up.err, "already used")) {
      ADD_FAILURE() << "tools/cluster up failed (" << up.exit_code << "):\n" << up.out << up.err;
      return nullptr;
    }
  }
  ADD_FAILURE() << "tools/cluster up found no free subnet";
  return nullptr;
}

TestCluster::~TestCluster() {
  if (!up_) return;
  Finished down = RunScript({"down", "--name", name_, "--state-dir", state_dir_});
  EXPECT_EQ(down.exit_code, 0) << "tools/cluster down: " << down.out << down.err;
}

std::string TestCluster::address(int host) const {
  return subnet_ + "." + std::to_string(host + 1);
}
std::string TestCluster::netns(int host) const { return name_ + "-h" + std::to_string(host); }
std::string TestCluster::bridge_port(int host) const { return name_ + "-v" + std::to_string(host); }

std::vector<std::string> TestCluster::SshFlags() const {
  return {"--ssh-command", "ssh -F " + state_dir_ + "/ssh_config"};
}

std::string TestCluster::HostList(int hosts, int slots) const {
  std::string list;
  for (int h = 0; h < hosts; ++h) {
    if (h > 0) list += ',';
    list += address(h) + ":" + std::to_string(slots);
  }
  return list;
}

int TestCluster::Script(const std::vector<std::string>& args, std::string* out) const {
  std::vector<std::string> full = args;
  full.insert(full.end(), {"--name", name_, "--state-dir", state_dir_});
  Finished run = RunScript(full);
  if (out != nullptr) *out = run.out + run.err;
  return run.exit_code;
}

std::vector<int> ProcessesMentioning(const std::string& entry) {
  std::vector<int> pids;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return pids;
  // Arguments and environment entries are NUL-separated; match a whole one.
  const std::string needle = std::string(1, '\0') + entry + '\0';
  while (dirent* e = ::readdir(proc)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == ::getpid()) continue;
    for (const char* file : {"/environ", "/cmdline"}) {
      std::ifstream in(std::string("/proc/") + e->d_name + file, std::ios::binary);
      std::string text(1, '\0');
      text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      if (text.find(needle) != std::string::npos) {
        pids.push_back(pid);
        break;
      }
    }
  }
  ::closedir(proc);
  return pids;
}

bool WaitUntilNoProcessMentions(const std::string& entry, Deadline deadline, std::string* left) {
  while (true) {
    const std::vector<int> pids = ProcessesMentioning(entry);
    if (pids.empty()) return true;
    if (deadline.Expired()) {
      left->clear();
      for (int pid : pids) *left += std::to_string(pid) + " ";
      return false;
    }
    // Processes end on their own schedule; look again shortly.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace cohort::testing
