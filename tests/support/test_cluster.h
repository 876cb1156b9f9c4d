// TestCluster: an emulated cluster (tools/cluster) for one test: N network
// namespaces with their own sshd, brought up under a name and subnet unique
// to the test process and taken down again when the object goes, however the
// test ends. Also the check that nothing of a job is left running.
#ifndef COHORT_TESTS_SUPPORT_TEST_CLUSTER_H_
#define COHORT_TESTS_SUPPORT_TEST_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "common/deadline.h"

namespace cohort::testing {

class TestCluster {
 public:
  // Why the cluster cannot exist on this machine (not root, no `ip netns`,
  // no sshd), or "" when it can.
  static std::string Unsupported();

  // Brings up `hosts` hosts with links shaped to `rate`; nullptr (and a test
  // failure) when `up` fails.
  static std::unique_ptr<TestCluster> Up(int hosts, const std::string& rate = "10gbit");
  ~TestCluster();  // tools/cluster down; a failure there fails the test

  const std::string& name() const { return name_; }
  const std::string& state_dir() const { return state_dir_; }
  std::string address(int host) const;      // SUBNET.(host+1)
  std::string netns(int host) const;        // NAME-h<host>
  std::string bridge_port(int host) const;  // NAME-v<host>, the host's link
  // "--ssh-command", "ssh -F STATE/ssh_config": the flags cohort run needs.
  std::vector<std::string> SshFlags() const;
  // "ADDR0:slots,ADDR1:slots,..." for the first `hosts` hosts.
  std::string HostList(int hosts, int slots) const;

  // Runs tools/cluster with `args` (e.g. {"status"}) for this cluster;
  // returns its exit status, output in `out`.
  int Script(const std::vector<std::string>& args, std::string* out = nullptr) const;

 private:
  TestCluster() = default;
  std::string name_, subnet_, state_dir_;
  bool up_ = false;
};

// The path of tools/cluster in the source tree.
std::string ClusterScript();

// Processes on this machine (every namespace shares its process table) with
// `entry` as a whole argument or environment entry. A test marks a job by
// running its workers as `/usr/bin/env MARK=<token> WORKER...`: the ssh
// clients, remote agents and workers then all carry it.
std::vector<int> ProcessesMentioning(const std::string& entry);

// Waits until no process mentions `entry`; false (with the survivors' pids
// in `left`) at the deadline.
bool WaitUntilNoProcessMentions(const std::string& entry, Deadline deadline, std::string* left);

// A value unique to this test process and moment, for marking a job.
std::string UniqueToken();

}  // namespace cohort::testing

#endif  // COHORT_TESTS_SUPPORT_TEST_CLUSTER_H_
