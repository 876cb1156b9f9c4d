// Multi-host tests on the emulated cluster (tools/cluster): `cohort run` over
// ssh onto network namespaces, each with its own sshd and shaped link. Every
// test brings up its own cluster (a name and subnet unique to the test
// process) and takes it down at the end, and checks that no process of the
// job is left on any host. Skipped, with the reason, where namespaces cannot
// be made (not root, no iproute2 or sshd).
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.h"
#include "support/test_cluster.h"

namespace cohort::testing {
namespace {

constexpr double kJobSeconds = 90;  // every job here finishes far sooner

class MultiHost : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = TestCluster::Unsupported();
    if (!why.empty()) GTEST_SKIP() << "emulated cluster unavailable: " << why;
    mark_ = "COHORT_TEST_JOB=" + UniqueToken();
  }

  // Brings up `hosts` hosts; false (test failed) when that fails.
  bool Up(int hosts) {
    cluster_ = TestCluster::Up(hosts);
    return cluster_ != nullptr;
  }

  // `cohort run` across the cluster with `flags`, then the marked command.
  Finished Run(int np, const std::string& hosts, const std::vector<std::string>& command,
               std::vector<std::string> flags = {}) {
    std::vector<std::string> args = {"run",       "-np", std::to_string(np), "-H", hosts,
                                     "--timeout", "20"};
    for (const std::string& f : cluster_->SshFlags()) args.push_back(f);
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "/usr/bin/env", mark_});
    args.insert(args.end(), command.begin(), command.end());
    return RunCohort(args, kJobSeconds);
  }

  // Nothing of the job runs any more on any host (they share /proc).
  void ExpectNothingLeft() {
    std::string left;
    EXPECT_TRUE(WaitUntilNoProcessMentions(mark_, Deadline::AfterSeconds(10), &left))
        << "processes of the job still running: " << left;
  }

  // The workers' verdict lines: "[r] rank r: N collective checks exact".
  static int ExactRanks(const std::string& out) {
    static const std::regex line(R"(^\[(\d+)\] rank \1: \d+ collective checks exact$)");
    int n = 0;
    for (const std::string& l : Lines(out)) n += std::regex_match(l, line) ? 1 : 0;
    return n;
  }

  // Plays srun or mpirun: starts rank r with envs[r] in the namespace of host
  // r / 2; every rank must check every collective exactly.
  void ExpectRanksExactInNamespaces(const std::vector<std::map<std::string, std::string>>& envs) {
    std::vector<std::vector<std::string>> argvs;
    for (size_t r = 0; r < envs.size(); ++r) {
      argvs.push_back({"/usr/sbin/ip", "netns", "exec", cluster_->netns(static_cast<int>(r) / 2),
                       "/usr/bin/env", mark_, TestBinary("collectives_worker"), "all", "quick"});
    }
    const std::vector<Finished> results = RunTogether(argvs, envs, kJobSeconds);
    for (size_t r = 0; r < results.size(); ++r) {
      EXPECT_EQ(results[r].exit_code, 0)
          << "rank " << r << ": " << results[r].out << results[r].err;
      EXPECT_TRUE(Contains(results[r].out, "rank " + std::to_string(r) + ": ")) << results[r].out;
    }
  }

  std::string mark_;
  std::unique_ptr<TestCluster> cluster_;
};

std::string Worker() { return TestBinary("collectives_worker"); }

// True once process `pid` has exited (a zombie has exited too).
bool WaitUntilGone(const std::string& pid, Deadline deadline) {
  while (true) {
    std::ifstream in("/proc/" + pid + "/stat");
    std::string line;
    if (!std::getline(in, line)) return true;
    const size_t paren = line.rfind(')');
    if (paren != std::string::npos && line.size() > paren + 2 && line[paren + 2] == 'Z')
      return true;
    if (deadline.Expired()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Every collective, dtype and op (the quick sizes) across 3 hosts, one rank
// each: all TCP.
TEST_F(MultiHost, EveryCollectiveExactAcrossThreeHosts) {
  if (!Up(3)) return;
  Finished f = Run(3, cluster_->HostList(3, 1), {Worker(), "all", "quick"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(ExactRanks(f.out), 3) << f.out << f.err;
  ExpectNothingLeft();
}

TEST_F(MultiHost, EveryCollectiveExactAcrossFourHosts) {
  if (!Up(4)) return;
  Finished f = Run(4, cluster_->HostList(4, 1), {Worker(), "all", "quick"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(ExactRanks(f.out), 4) << f.out << f.err;
  ExpectNothingLeft();
}

// 2 hosts x 2 ranks: shared memory inside a host, TCP between them; the
// launcher's placement (local and cross ranks) must match the mesh's.
TEST_F(MultiHost, TwoHostsTwoRanksEachMixShmAndTcp) {
  if (!Up(2)) return;
  Finished where = Run(4, cluster_->HostList(2, 2),
                       {"sh", "-c",
                        "echo placed $COHORT_LOCAL_RANK/$COHORT_LOCAL_SIZE "
                        "$COHORT_CROSS_RANK/$COHORT_CROSS_SIZE $(hostname -I)"});
  ASSERT_EQ(where.exit_code, 0) << where.out << where.err;
  const std::string a0 = cluster_->address(0), a1 = cluster_->address(1);
  EXPECT_TRUE(Contains(where.out, "[0] placed 0/2 0/2 " + a0)) << where.out;
  EXPECT_TRUE(Contains(where.out, "[1] placed 1/2 0/2 " + a0)) << where.out;
  EXPECT_TRUE(Contains(where.out, "[2] placed 0/2 1/2 " + a1)) << where.out;
  EXPECT_TRUE(Contains(where.out, "[3] placed 1/2 1/2 " + a1)) << where.out;

  Finished f = Run(4, cluster_->HostList(2, 2), {Worker(), "all", "quick"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(ExactRanks(f.out), 4) << f.out << f.err;
  ExpectNothingLeft();
}

// The working directory, -x variables and COHORT_* settings reach remote
// workers; the secret reaches them but is on no command line.
TEST_F(MultiHost, RemoteWorkersGetDirectoryAndVariables) {
  if (!Up(2)) return;
  Finished f =
      Run(2, cluster_->HostList(2, 1),
          {"bash", "-c",
           "echo dir=$(pwd) x=$TEST_X y=$TEST_Y t=$COHORT_TIMEOUT "
           "secret=${#COHORT_SECRET}; "
           // "[a]bc..." matches the secret but not this grep's own arguments.
           "echo args: $(ps -eo args | grep -c \"[${COHORT_SECRET:0:1}]${COHORT_SECRET:1}\")"},
          {"-x", "TEST_X=hello world", "-x", "PATH"});
  ASSERT_EQ(f.exit_code, 0) << f.out << f.err;
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof(cwd)), nullptr);
  for (int r = 0; r < 2; ++r) {
    std::string p = "[";  // appended: GCC 12 warns falsely (-Wrestrict) on "[" + string
    p += std::to_string(r) + "] ";
    EXPECT_TRUE(Contains(f.out, p + "dir=" + cwd + " x=hello world y= t=20 secret=64")) << f.out;
    // No process on any host (they share /proc) has it among its arguments.
    EXPECT_TRUE(Contains(f.out, p + "args: 0\n")) << f.out;
  }
  ExpectNothingLeft();
}

// --network-interface names the interface per host: each takes the first
// of the list it has, so the bridge on the launcher's host (which also has
// an eth0, toward the outside) and eth0 on the emulated hosts. The store
// listens on the bridge's address and the collectives run; an interface no host has is an error
// that names it.
TEST_F(MultiHost, NetworkInterfaceChoosesTheAddresses) {
  if (!Up(2)) return;
  const std::string interfaces = cluster_->name() + "-br,eth0";
  Finished f = Run(2, cluster_->HostList(2, 1),
                   {"sh", "-c",
                    "echo store=$COHORT_STORE_ADDR if=$COHORT_NETWORK_INTERFACE && exec " +
                        Worker() + " all quick"},
                   {"--network-interface", interfaces});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  const std::string bridge =
      cluster_->address(0).substr(0, cluster_->address(0).rfind('.')) + ".254:";
  EXPECT_TRUE(Contains(f.out, "[1] store=" + bridge)) << f.out;
  EXPECT_TRUE(Contains(f.out, " if=" + interfaces + "\n")) << f.out;
  EXPECT_EQ(ExactRanks(f.out), 2) << f.out << f.err;

  Finished bad = Run(2, cluster_->HostList(2, 1), {"true"}, {"--network-interface", "nosuch0"});
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_TRUE(Contains(bad.err,
                       "network interface 'nosuch0': none of them is up with an IPv4 "
                       "address on this host (it has: "))
      << bad.err;
  ExpectNothingLeft();
}

// A worker on another host dies mid-allreduce: the job stops with a message
// naming the rank and its host, within the timeout, leaving nothing behind.
TEST_F(MultiHost, WorkerKilledOnAnotherHostStopsTheJob) {
  if (!Up(2)) return;
  Finished f = Run(4, cluster_->HostList(2, 2), {Worker(), "die"});
  EXPECT_EQ(f.exit_code, 137) << f.out << f.err;
  const std::string host = cluster_->address(1);
  EXPECT_TRUE(Contains(f.err, "cohort run: rank 3 on host " + host +
                                  " exited with status 137 first; stopping the other"))
      << f.err;
  EXPECT_TRUE(Contains(f.err, "[3] cohort run: rank 3 on host " + host + ": the worker (pid"))
      << f.err;
  EXPECT_LT(f.seconds, 20) << f.err;
  ExpectNothingLeft();
}

// A host whose link is down: ssh cannot connect; the job stops naming the
// host and rank after the connect timeout, and the ranks already started on
// the other hosts are stopped.
TEST_F(MultiHost, UnreachableHostStopsTheJob) {
  if (!Up(3)) return;
  ASSERT_EQ(0, ChildProcess({"/usr/sbin/ip", "link", "set", cluster_->bridge_port(2), "down"})
                   .Finish(Deadline::AfterSeconds(10))
                   .exit_code);
  Finished f =
      Run(3, cluster_->HostList(3, 1), {Worker(), "all", "quick"}, {"--ssh-connect-timeout", "2"});
  EXPECT_EQ(f.exit_code, 255) << f.out << f.err;
  EXPECT_TRUE(Contains(f.err, "cohort run: rank 2 on host " + cluster_->address(2) +
                                  " could not be reached or lost its connection"))
      << f.err;
  EXPECT_LT(f.seconds, 15) << f.err;
  ExpectNothingLeft();
}

// A host whose sshd is gone refuses the connection at once.
TEST_F(MultiHost, HostWithoutSshdStopsTheJob) {
  if (!Up(2)) return;
  ASSERT_EQ(0,
            ChildProcess({"/bin/sh", "-c", "kill $(cat " + cluster_->state_dir() + "/sshd-h1.pid)"})
                .Finish(Deadline::AfterSeconds(10))
                .exit_code);
  Finished f = Run(2, cluster_->HostList(2, 1), {Worker(), "all", "quick"});
  EXPECT_EQ(f.exit_code, 255) << f.out << f.err;
  EXPECT_TRUE(Contains(f.err, "Connection refused")) << f.err;
  EXPECT_TRUE(Contains(
      f.err, "cohort run: rank 1 on host " + cluster_->address(1) + " could not be reached"))
      << f.err;
  ExpectNothingLeft();
}

// Interrupting the launcher stops the workers on every host.
TEST_F(MultiHost, InterruptStopsRemoteWorkers) {
  if (!Up(2)) return;
  std::vector<std::string> args = {"run", "-np", "2", "-H", cluster_->HostList(2, 1)};
  for (const std::string& flag : cluster_->SshFlags()) args.push_back(flag);
  args.insert(args.end(), {"--", "/usr/bin/env", mark_, "sh", "-c",
                           "trap 'echo got INT; exit 3' INT; echo ready $COHORT_RANK; "
                           "while :; do sleep 0.05; done"});
  args.insert(args.begin(), COHORT_CLI_PATH);
  ChildProcess launcher(args);
  ASSERT_TRUE(launcher.WaitFor(
      [&] { return Contains(launcher.out(), "ready 0") && Contains(launcher.out(), "ready 1"); },
      Deadline::AfterSeconds(30)))
      << launcher.out() << launcher.err();
  ::kill(launcher.pid(), SIGINT);
  Finished f = launcher.Finish(Deadline::AfterSeconds(30));
  EXPECT_EQ(f.exit_code, 128 + SIGINT) << f.out << f.err;
  EXPECT_TRUE(Contains(f.out, "[0] got INT")) << f.out;
  EXPECT_TRUE(Contains(f.out, "[1] got INT")) << f.out;
  ExpectNothingLeft();
}

// A scratch directory for one test's files (a discovery script), removed at
// the end.
class ScratchDir {
 public:
  ScratchDir() {
    char pattern[] = "/tmp/cohort-multihost-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  // Writes an executable shell script `name` with `body`; its path.
  std::string Script(const std::string& name, const std::string& body) const {
    const std::string path = path_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// `cohort run` of an elastic job over `discovery`, the workers marked.
Finished RunElastic(const TestCluster& cluster, const std::string& discovery, int np,
                    const std::string& mark, const std::vector<std::string>& command) {
  std::vector<std::string> args = {"run",
                                   "-np",
                                   std::to_string(np),
                                   "--min-np",
                                   "2",
                                   "--timeout",
                                   "20",
                                   "--elastic-timeout",
                                   "30",
                                   "--timeout-secs",
                                   "60",
                                   "--host-discovery-script",
                                   discovery};
  for (const std::string& f : cluster.SshFlags()) args.push_back(f);
  args.insert(args.end(), {"--", "/usr/bin/env", mark});
  args.insert(args.end(), command.begin(), command.end());
  return RunCohort(args, kJobSeconds);
}

// An elastic job whose discovery script lists other hosts, with no
// --network-interface: the store listens where they reach it (this host's
// address toward the first, as for -H) and the job runs. It used to tell
// every worker 127.0.0.1, where the remote ones waited for a store that was
// not there until the job was killed.
TEST_F(MultiHost, ElasticJobOnOtherHostsReachesItsStore) {
  if (!Up(2)) return;
  ScratchDir dir;
  const std::string discovery = dir.Script(
      "discover", "echo " + cluster_->address(0) + ":2\necho " + cluster_->address(1) + ":1\n");
  Finished f = RunElastic(*cluster_, discovery, 3, mark_, {Worker(), "all", "quick"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_TRUE(Contains(f.err, "cohort run: elastic round 1 (start): 3 workers")) << f.err;
  EXPECT_EQ(ExactRanks(f.out), 3) << f.out << f.err;
  EXPECT_LT(f.seconds, 20) << f.err;
  ExpectNothingLeft();
}

// Every host listed at the start is this one, so the store listens on
// loopback; another host listed later cannot reach it: the launcher says so
// once, naming it and --network-interface, starts nothing there, and the
// job goes on with the workers it has.
TEST_F(MultiHost, ElasticHostFoundLaterBeyondALoopbackStoreIsNamed) {
  if (!Up(1)) return;
  ScratchDir dir;
  const std::string remote = cluster_->address(0);
  // The second run of the script adds the remote host and lets the
  // workers, which wait for that, go on.
  const std::string discovery = dir.Script(
      "discover", "n=$(cat " + dir.path() + "/runs 2>/dev/null || echo 0)\necho $((n + 1)) > " +
                      dir.path() + "/runs\necho localhost:2\nif [ \"$n\" -ge 1 ]; then echo " +
                      remote + ":1; touch " + dir.path() + "/go; fi\n");
  Finished f = RunElastic(*cluster_, discovery, 3, mark_,
                          {"sh", "-c",
                           "while [ ! -e " + dir.path() + "/go ]; do sleep 0.05; done; exec " +
                               Worker() + " all quick"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  const std::string said = "cohort run: host " + remote +
                           " is another host, but the job's store listens on 127.0.0.1 (every "
                           "host the discovery script listed at the start was this one); starting "
                           "no workers there: give --network-interface for the store to listen "
                           "where hosts found later reach it\n";
  EXPECT_TRUE(Contains(f.err, said)) << f.err;
  EXPECT_EQ(f.err.find(said), f.err.rfind(said)) << "said once: " << f.err;
  EXPECT_EQ(ExactRanks(f.out), 2) << f.out << f.err;
  ExpectNothingLeft();
}

// Workers bootstrapping from SLURM's variables across two hosts, as srun
// would set them (the test plays srun: it starts each task in its host's
// namespace). Rank 0 hosts the store on the first node of the node list.
TEST_F(MultiHost, SlurmEnvironmentAcrossHosts) {
  if (!Up(2)) return;
  const std::string list =
      cluster_->address(0).substr(0, cluster_->address(0).rfind('.')) + ".[1-2]";
  std::vector<std::map<std::string, std::string>> envs;
  for (int rank = 0; rank < 4; ++rank) {
    const int node = rank / 2;
    envs.push_back({{"SLURM_PROCID", std::to_string(rank)},
                    {"SLURM_NTASKS", "4"},
                    {"SLURM_LOCALID", std::to_string(rank % 2)},
                    {"SLURM_NODEID", std::to_string(node)},
                    {"SLURM_NNODES", "2"},
                    {"SLURM_TASKS_PER_NODE", "2(x2)"},
                    {"SLURM_JOB_NODELIST", list},
                    {"SLURM_JOB_ID", "4242"},
                    {"SLURM_STEP_ID", "0"},
                    {"COHORT_SECRET", "slurm-test-secret"},
                    {"COHORT_TIMEOUT", "20"}});
  }
  ExpectRanksExactInNamespaces(envs);
  ExpectNothingLeft();
}

// The same under Open MPI's variables; across hosts the store address comes
// from COHORT_STORE_ADDR, as docs/multi-host.md says for mpirun.
TEST_F(MultiHost, MpirunEnvironmentAcrossHosts) {
  if (!Up(2)) return;
  std::vector<std::map<std::string, std::string>> envs;
  for (int rank = 0; rank < 4; ++rank) {
    const int node = rank / 2;
    envs.push_back({{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
                    {"OMPI_COMM_WORLD_SIZE", "4"},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(rank % 2)},
                    {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                    {"OMPI_COMM_WORLD_NODE_RANK", std::to_string(node)},
                    {"COHORT_STORE_ADDR", cluster_->address(0) + ":29411"},
                    {"COHORT_SECRET", "mpirun-test-secret"},
                    {"COHORT_TIMEOUT", "20"}});
  }
  ExpectRanksExactInNamespaces(envs);
  ExpectNothingLeft();
}

// The cluster script itself: up twice (idempotent), status, down twice; down
// leaves no namespace, link or state behind.
TEST(ClusterScript, UpStatusDownLeaveNothingBehind) {
  const std::string why = TestCluster::Unsupported();
  if (!why.empty()) GTEST_SKIP() << "emulated cluster unavailable: " << why;
  const std::string name = "cs" + std::to_string(::getpid() % 1000000);
  const std::string state = "/tmp/cohort-test-cluster-" + name;
  auto script = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"/bin/bash", ClusterScript()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--name", name, "--state-dir", state});
    return ChildProcess(argv).Finish(Deadline::AfterSeconds(60));
  };
  const std::string subnet = "10.77." + std::to_string(1 + (::getpid() + 101) % 250);
  for (int i = 0; i < 2; ++i) {
    Finished up = script({"up", "--hosts", "2", "--rate", "1gbit", "--subnet", subnet});
    ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  }
  std::vector<std::string> sshd_pids;
  for (const char* host : {"h0", "h1"}) {
    std::ifstream in(state + "/sshd-" + host + ".pid");
    std::string pid;
    ASSERT_TRUE(in >> pid) << "no pid file for sshd of " << host;
    sshd_pids.push_back(pid);
  }
  Finished status = script({"status"});
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_TRUE(Contains(
      status.out, "host 1: netns " + name + "-h1, eth0 " + subnet + ".2/24, sshd up, rate 1Gbit"))
      << status.out;
  for (int i = 0; i < 2; ++i) {
    Finished down = script({"down"});
    EXPECT_EQ(down.exit_code, 0) << down.out << down.err;
  }
  Finished netns =
      ChildProcess({"/usr/sbin/ip", "netns", "list"}).Finish(Deadline::AfterSeconds(10));
  EXPECT_FALSE(Contains(netns.out, name + "-")) << netns.out;
  Finished links = ChildProcess({"/usr/sbin/ip", "-o", "link"}).Finish(Deadline::AfterSeconds(10));
  EXPECT_FALSE(Contains(links.out, name + "-")) << links.out;
  EXPECT_NE(::access(state.c_str(), F_OK), 0) << state << " still exists";
  for (const std::string& pid : sshd_pids) {
    EXPECT_TRUE(WaitUntilGone(pid, Deadline::AfterSeconds(5))) << "sshd " << pid << " still runs";
  }
  Finished after = script({"status"});
  EXPECT_EQ(after.exit_code, 3) << after.out;
}

}  // namespace
}  // namespace cohort::testing
