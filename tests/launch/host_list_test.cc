// Tests of the multi-host pieces that need no second host: host lists and
// hostfiles, rank placement, the ssh and agent command lines, and the
// errors `cohort run` gives for bad multi-host flags.
#include "launch/host_list.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launch/remote_agent.h"
#include "launch/ssh_launcher.h"
#include "rendezvous/local_address.h"
#include "support/child_process.h"

namespace cohort {
namespace {

using testing::Contains;
using testing::Finished;

TEST(HostList, ParsesSlotsAndMergesRepeatedHosts) {
  Result<std::vector<HostSlots>> hosts = ParseHostList("a:2,b,c:4,a:1");
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  ASSERT_EQ(hosts->size(), 3u);
  EXPECT_EQ((*hosts)[0].host, "a");
  EXPECT_EQ((*hosts)[0].slots, 3);
  EXPECT_EQ((*hosts)[1].host, "b");
  EXPECT_EQ((*hosts)[1].slots, 1);
  EXPECT_EQ((*hosts)[2].slots, 4);
}

TEST(HostList, BadListsNameTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a:0", "-H 'a:0': 'a:0' has a bad slot count (expected host:N with N >= 1)"},
      {"a:x", "-H 'a:x': 'a:x' has a bad slot count"},
      {"a,,b", "-H 'a,,b': '' is not a host name"},
      {"a,", "-H 'a,': empty host name"},
      {"-oProxyCommand=x", "'-oProxyCommand=x' is not a host name"},
      {"a b", "'a b' is not a host name"},
  };
  for (const auto& [list, message] : cases) {
    Result<std::vector<HostSlots>> hosts = ParseHostList(list);
    ASSERT_FALSE(hosts.ok()) << list;
    EXPECT_TRUE(Contains(hosts.status().message(), message)) << hosts.status().message();
  }
}

TEST(Hostfile, ReadsHostsSlotsAndComments) {
  Result<std::vector<HostSlots>> hosts = ParseHostfileText(
      "# cluster\nnode1 slots=2\n\n  node2   # one slot\nnode3 slots=4 max_slots=8\n", "hf");
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  ASSERT_EQ(hosts->size(), 3u);
  EXPECT_EQ((*hosts)[0].host, "node1");
  EXPECT_EQ((*hosts)[0].slots, 2);
  EXPECT_EQ((*hosts)[1].host, "node2");
  EXPECT_EQ((*hosts)[1].slots, 1);
  EXPECT_EQ((*hosts)[2].slots, 4);
}

TEST(Hostfile, ErrorsNameFileAndLine) {
  Result<std::vector<HostSlots>> bad = ParseHostfileText("node1 slots=2\nnode2 slots=0\n", "hf");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "hf:2: 'slots=0' needs a count of at least 1");
  bad = ParseHostfileText("node1 cpus=2\n", "hf");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "hf:1: unknown field 'cpus=2' (expected: host slots=N)");
  bad = ParseHostfileText("# nothing\n\n", "hf");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "hf: no hosts listed");
  bad = ParseHostfile("/nonexistent/hostfile");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--hostfile '/nonexistent/hostfile' cannot be read");
}

TEST(PlaceRanks, GroupsRanksByHostInOrder) {
  Result<JobPlacement> p = PlaceRanks({{"a", 2}, {"b", 3}, {"c", 2}}, 6);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->cross_size, 3);
  const std::vector<std::string> hosts = {"a", "a", "b", "b", "b", "c"};
  const std::vector<int> local = {0, 1, 0, 1, 2, 0};
  const std::vector<int> local_size = {2, 2, 3, 3, 3, 1};
  const std::vector<int> cross = {0, 0, 1, 1, 1, 2};
  ASSERT_EQ(p->ranks.size(), 6u);
  for (int r = 0; r < 6; ++r) {
    EXPECT_EQ(p->ranks[r].host, hosts[r]) << r;
    EXPECT_EQ(p->ranks[r].local_rank, local[r]) << r;
    EXPECT_EQ(p->ranks[r].local_size, local_size[r]) << r;
    EXPECT_EQ(p->ranks[r].cross_rank, cross[r]) << r;
  }
  // Fewer ranks than slots: later hosts get none and do not count.
  p = PlaceRanks({{"a", 2}, {"b", 2}}, 2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->cross_size, 1);
}

TEST(PlaceRanks, MoreRanksThanSlotsIsAnError) {
  Result<JobPlacement> p = PlaceRanks({{"a", 2}, {"b", 2}}, 5);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "-np 5 is more than the 4 slots the hosts offer");
}

TEST(SshLauncher, CommandLineQuotesEveryWord) {
  RemoteAgentOptions agent;
  agent.host = "n1";
  agent.rank = 3;
  agent.cwd = "/work/it's here";
  agent.grace_seconds = 2;
  agent.command = {"python3", "train.py", "--name", "a b;$(x)"};
  const std::string line = RemoteAgentCommandLine("/opt/cohort", agent);
  EXPECT_EQ(line,
            "exec '/opt/cohort' 'run' '--remote-agent' '--host' 'n1' '--rank' '3' '--cwd' "
            "'/work/it'\\''s here' '--grace-secs' '2' '--' 'python3' 'train.py' '--name' "
            "'a b;$(x)'");
  // The remote shell reads it back word for word.
  Finished echoed = testing::ChildProcess({"/bin/sh", "-c", "printf '%s\\n' " + line.substr(5)})
                        .Finish(Deadline::AfterSeconds(10));
  EXPECT_TRUE(Contains(echoed.out, "/work/it's here\n--grace-secs\n")) << echoed.out;
  EXPECT_TRUE(Contains(echoed.out, "\na b;$(x)\n")) << echoed.out;
}

TEST(SshLauncher, SshArgvUsesBatchModeAndTheOptions) {
  SshOptions ssh;
  ssh.command = {"ssh", "-F", "cfg"};
  ssh.port = 2222;
  ssh.identity_file = "/k/id";
  ssh.connect_timeout_seconds = 2.5;
  const std::vector<std::string> argv = SshArgv(ssh, "n1", "exec x");
  const std::vector<std::string> expected = {"ssh",
                                             "-F",
                                             "cfg",
                                             "-T",
                                             "-x",
                                             "-o",
                                             "BatchMode=yes",
                                             "-o",
                                             "ServerAliveInterval=5",
                                             "-o",
                                             "ServerAliveCountMax=3",
                                             "-o",
                                             "ConnectTimeout=3",
                                             "-p",
                                             "2222",
                                             "-i",
                                             "/k/id",
                                             "--",
                                             "n1",
                                             "exec x"};
  EXPECT_EQ(argv, expected);
}

TEST(RemoteAgent, EnvBlockIsEntriesThenAnEmptyOne) {
  EXPECT_EQ(EncodeEnvBlock({{"A", "1"}, {"B", "x=y z"}}), std::string("A=1\0B=x=y z\0\0", 13));
  EXPECT_EQ(EncodeEnvBlock({}), std::string("\0", 1));
}

// `cohort run --remote-agent ARGS...`, with its stdin written by the test
// as ssh would carry the launcher's.
std::unique_ptr<testing::ChildProcess> StartAgent(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {COHORT_CLI_PATH, "run", "--remote-agent"};
  argv.insert(argv.end(), args.begin(), args.end());
  return std::make_unique<testing::ChildProcess>(argv, std::map<std::string, std::string>{}, false,
                                                 true);
}

const std::string kNoEnv(1, '\0');  // an empty environment block
constexpr const char* kReadyLoop = "echo ready; while :; do sleep 0.05; done";

TEST(RemoteAgent, RunsTheWorkerWithTheSentEnvironment) {
  auto agent = StartAgent({"--host", "h9", "--rank", "5", "--cwd", "/tmp", "--", "sh", "-c",
                           "echo \"$AGENT_TEST in $(pwd)\"; exit 4"});
  ASSERT_TRUE(agent->WriteStdin(EncodeEnvBlock({{"AGENT_TEST", "sent value"}})));
  Finished f = agent->Finish(Deadline::AfterSeconds(30));
  EXPECT_EQ(f.exit_code, 4) << f.out << f.err;
  EXPECT_EQ(f.out, "sent value in /tmp\n") << f.err;
}

// A signal number sent as a byte reaches the worker.
TEST(RemoteAgent, ForwardsSignalBytes) {
  auto agent = StartAgent({"--host", "h9", "--rank", "5", "--", "sh", "-c",
                           std::string("trap 'echo got INT; exit 8' INT; ") + kReadyLoop});
  ASSERT_TRUE(agent->WriteStdin(kNoEnv));
  ASSERT_TRUE(agent->WaitForOutput("ready\n", Deadline::AfterSeconds(30))) << agent->err();
  ASSERT_TRUE(agent->WriteStdin(std::string(1, static_cast<char>(SIGINT))));
  Finished f = agent->Finish(Deadline::AfterSeconds(30));
  EXPECT_EQ(f.exit_code, 8) << f.out << f.err;
  EXPECT_EQ(f.out, "ready\ngot INT\n") << f.err;
}

// The end of stdin means the launcher is gone: the worker gets SIGTERM.
TEST(RemoteAgent, StopsTheWorkerWhenTheLauncherGoes) {
  auto agent = StartAgent({"--host", "h9", "--rank", "5", "--grace-secs", "5", "--", "sh", "-c",
                           std::string("trap 'echo got TERM; exit 9' TERM; ") + kReadyLoop});
  ASSERT_TRUE(agent->WriteStdin(kNoEnv));
  ASSERT_TRUE(agent->WaitForOutput("ready\n", Deadline::AfterSeconds(30))) << agent->err();
  agent->CloseStdin();
  Finished f = agent->Finish(Deadline::AfterSeconds(30));
  EXPECT_EQ(f.exit_code, 9) << f.out << f.err;
  EXPECT_EQ(f.out, "ready\ngot TERM\n") << f.err;
  EXPECT_TRUE(Contains(f.err,
                       "cohort run: rank 5 on host h9: lost the launcher (connection "
                       "closed); stopping the worker"))
      << f.err;
}

// A worker that ignores SIGTERM is killed after the grace period.
TEST(RemoteAgent, KillsAWorkerThatIgnoresTermAfterTheGrace) {
  auto agent = StartAgent({"--host", "h9", "--rank", "5", "--grace-secs", "0.5", "--", "sh", "-c",
                           std::string("trap '' TERM; ") + kReadyLoop});
  ASSERT_TRUE(agent->WriteStdin(kNoEnv));
  ASSERT_TRUE(agent->WaitForOutput("ready\n", Deadline::AfterSeconds(30))) << agent->err();
  agent->CloseStdin();
  Finished f = agent->Finish(Deadline::AfterSeconds(30));
  EXPECT_EQ(f.exit_code, 128 + SIGKILL) << f.out << f.err;
  EXPECT_EQ(f.out, "ready\n");
}

TEST(RemoteAgent, ErrorsNameRankAndHost) {
  Finished f = testing::ChildProcess({"/bin/sh", "-c",
                                      "printf '\\0' | " COHORT_CLI_PATH
                                      " run --remote-agent --host h9 --rank 5 --cwd /nonexistent "
                                      "-- true"})
                   .Finish(Deadline::AfterSeconds(30));
  EXPECT_EQ(f.exit_code, 1);
  EXPECT_TRUE(Contains(f.err,
                       "cohort run: rank 5 on host h9: cannot enter the working directory "
                       "'/nonexistent': No such file or directory"))
      << f.err;
  f = testing::ChildProcess({"/bin/sh", "-c",
                             "printf '\\0' | " COHORT_CLI_PATH
                             " run --remote-agent --host h9 --rank 5 -- no-such-command-xyz"})
          .Finish(Deadline::AfterSeconds(30));
  EXPECT_EQ(f.exit_code, 127);
  EXPECT_TRUE(
      Contains(f.err, "cohort run: rank 5 on host h9: command not found: 'no-such-command-xyz'"))
      << f.err;
  // No environment at all: the launcher went away first.
  f = testing::ChildProcess({"/bin/sh", "-c",
                             COHORT_CLI_PATH " run --remote-agent --host h9 --rank 5 -- true "
                                             "</dev/null"})
          .Finish(Deadline::AfterSeconds(30));
  EXPECT_EQ(f.exit_code, 1);
  EXPECT_TRUE(Contains(f.err, "the launcher went away before sending the environment")) << f.err;
}

TEST(RunFlags, BadHostFlagsExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "-np", "2", "-H", "a:0", "true"}, "'a:0' has a bad slot count"},
      {{"run", "-np", "5", "-H", "a:2,b:2", "true"}, "-np 5 is more than the 4 slots"},
      {{"run", "-np", "2", "-H", "a", "--hostfile", "f", "true"}, "not both"},
      {{"run", "-np", "2", "-H", "a:2", "--ssh-port", "70000", "true"},
       "--ssh-port '70000' is above 65535"},
      {{"run", "-np", "2", "-H", "a:2", "--ssh-connect-timeout", "soon", "true"},
       "--ssh-connect-timeout"},
      {{"run", "-np", "2", "--hostfile", "/nonexistent/hf", "true"},
       "--hostfile '/nonexistent/hf' cannot be read"},
  };
  for (const auto& [args, message] : cases) {
    Finished f = testing::RunCohort(args, 30);
    EXPECT_EQ(f.exit_code, 2) << f.err;
    EXPECT_TRUE(Contains(f.err, message)) << f.err;
  }
  // -x of a variable the launcher does not have is caught before any start.
  Finished f = testing::RunCohort(
      {"run", "-np", "1", "-H", "203.0.113.7", "-x", "COHORT_TEST_SURELY_UNSET", "true"}, 30);
  EXPECT_EQ(f.exit_code, 1) << f.err;
  EXPECT_TRUE(Contains(f.err, "-x COHORT_TEST_SURELY_UNSET: not set in the launcher's environment"))
      << f.err;
}

// localhost in a host list runs without ssh, with the placement variables.
TEST(RunFlags, LocalhostRunsWithoutSsh) {
  Finished f = testing::RunCohort(
      {"run", "-np", "3", "-H", "localhost:3", "--ssh-command", "/nonexistent/ssh", "--", "sh",
       "-c", "echo $COHORT_LOCAL_RANK/$COHORT_LOCAL_SIZE $COHORT_STORE_ADDR"},
      30);
  EXPECT_EQ(f.exit_code, 0) << f.err;
  EXPECT_TRUE(Contains(f.out, "[2] 2/3 127.0.0.1:")) << f.out;
}

// This machine's own name (and an address of one of its interfaces) runs
// without ssh too, like localhost.
TEST(RunFlags, ThisHostsNameRunsWithoutSsh) {
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof(name) - 1), 0);
  ASSERT_TRUE(IsLocalHost(name)) << name;
  Result<std::string> address = FirstNonLoopbackAddress();
  if (address.ok()) {
    EXPECT_TRUE(IsLocalHost(*address)) << *address;
  }
  EXPECT_FALSE(IsLocalHost("192.0.2.1"));  // TEST-NET-1: never this host's
  Finished f = testing::RunCohort(
      {"run", "-np", "2", "-H", std::string(name) + ":2", "--ssh-command", "/nonexistent/ssh", "--",
       "sh", "-c", "echo $COHORT_LOCAL_RANK/$COHORT_LOCAL_SIZE"},
      30);
  EXPECT_EQ(f.exit_code, 0) << f.err;
  EXPECT_TRUE(Contains(f.out, "[1] 1/2\n")) << f.out;
}

}  // namespace
}  // namespace cohort
