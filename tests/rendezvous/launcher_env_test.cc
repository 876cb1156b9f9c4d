// Tests for reading the job's placement from each launcher's environment and
// for SLURM node-list expansion. The environment is a map; nothing here reads
// or changes the real process environment.
#include "rendezvous/launcher_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace cohort {
namespace {

using Vars = std::map<std::string, std::string>;

Result<JobEnvironment> Parse(const Vars& vars) {
  EnvLookup lookup = [&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  return ParseJobEnvironment(lookup);
}

// Expects kInvalidArgument whose message contains every one of `parts`.
void ExpectInvalid(const Vars& vars, const std::vector<std::string>& parts) {
  Result<JobEnvironment> job = Parse(vars);
  ASSERT_FALSE(job.ok()) << "parsed although invalid";
  EXPECT_EQ(job.status().code(), Status::Code::kInvalidArgument) << job.status().ToString();
  for (const std::string& part : parts) {
    EXPECT_NE(job.status().message().find(part), std::string::npos)
        << "message lacks \"" << part << "\": " << job.status().message();
  }
}

Vars CohortVars() {
  return {{"COHORT_RANK", "2"},
          {"COHORT_SIZE", "4"},
          {"COHORT_STORE_ADDR", "127.0.0.1:40000"},
          {"COHORT_SECRET", "abcd1234"}};
}

Vars MpirunVars() {
  return {{"OMPI_COMM_WORLD_RANK", "1"},       {"OMPI_COMM_WORLD_SIZE", "4"},
          {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
          {"OMPI_COMM_WORLD_NODE_RANK", "0"},  {"OMPI_MCA_ess_base_jobid", "1234567"}};
}

Vars SlurmVars() {
  return {{"SLURM_PROCID", "5"},      {"SLURM_NTASKS", "8"},
          {"SLURM_LOCALID", "1"},     {"SLURM_NODEID", "2"},
          {"SLURM_NNODES", "3"},      {"SLURM_TASKS_PER_NODE", "3(x2),2"},
          {"SLURM_JOB_ID", "123456"}, {"SLURM_JOB_NODELIST", "gpu[07-09]"},
          {"SLURM_STEP_ID", "0"}};
}

Vars TorchrunVars() {
  return {{"RANK", "3"},
          {"WORLD_SIZE", "8"},
          {"LOCAL_RANK", "3"},
          {"LOCAL_WORLD_SIZE", "4"},
          {"GROUP_RANK", "0"},
          {"GROUP_WORLD_SIZE", "2"},
          {"MASTER_ADDR", "host0"},
          {"MASTER_PORT", "29500"}};
}

Vars With(Vars vars, const Vars& changes) {
  for (const auto& [name, value] : changes) vars[name] = value;
  return vars;
}

Vars Without(Vars vars, const std::string& name) {
  vars.erase(name);
  return vars;
}

// ---- cohort run ----

TEST(LauncherEnv, CohortMinimal) {
  Result<JobEnvironment> job = Parse(CohortVars());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->launcher, "cohort");
  EXPECT_EQ(job->rank, 2);
  EXPECT_EQ(job->size, 4);
  EXPECT_EQ(job->local_rank, -1);
  EXPECT_EQ(job->local_size, -1);
  EXPECT_EQ(job->cross_rank, -1);
  EXPECT_EQ(job->cross_size, -1);
  EXPECT_EQ(job->store_host, "127.0.0.1");
  EXPECT_EQ(job->store_port, 40000);
  EXPECT_FALSE(job->rank0_hosts_store);
  EXPECT_EQ(job->secret, "abcd1234");
}

TEST(LauncherEnv, CohortFullPlacement) {
  Result<JobEnvironment> job = Parse(With(CohortVars(), {{"COHORT_LOCAL_RANK", "0"},
                                                         {"COHORT_LOCAL_SIZE", "2"},
                                                         {"COHORT_CROSS_RANK", "1"},
                                                         {"COHORT_CROSS_SIZE", "2"}}));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->local_rank, 0);
  EXPECT_EQ(job->local_size, 2);
  EXPECT_EQ(job->cross_rank, 1);
  EXPECT_EQ(job->cross_size, 2);
}

TEST(LauncherEnv, CohortIpv6StoreAddress) {
  Result<JobEnvironment> job = Parse(With(CohortVars(), {{"COHORT_STORE_ADDR", "[::1]:29400"}}));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->store_host, "::1");
  EXPECT_EQ(job->store_port, 29400);
}

TEST(LauncherEnv, CohortMissingRequiredVariables) {
  ExpectInvalid(Without(CohortVars(), "COHORT_SIZE"), {"COHORT_SIZE", "not set"});
  ExpectInvalid(Without(CohortVars(), "COHORT_STORE_ADDR"), {"COHORT_STORE_ADDR", "not set"});
  ExpectInvalid(Without(CohortVars(), "COHORT_SECRET"), {"COHORT_SECRET", "not set"});
  // An empty value counts as unset.
  ExpectInvalid(With(CohortVars(), {{"COHORT_SECRET", ""}}), {"COHORT_SECRET", "not set"});
}

TEST(LauncherEnv, CohortBadIntegers) {
  ExpectInvalid(With(CohortVars(), {{"COHORT_RANK", "abc"}}), {"COHORT_RANK='abc'", "integer"});
  ExpectInvalid(With(CohortVars(), {{"COHORT_RANK", "1x"}}), {"COHORT_RANK='1x'", "integer"});
  ExpectInvalid(With(CohortVars(), {{"COHORT_RANK", "-1"}}), {"COHORT_RANK='-1'", "negative"});
  ExpectInvalid(With(CohortVars(), {{"COHORT_SIZE", "0"}}), {"COHORT_SIZE='0'", "at least 1"});
  ExpectInvalid(With(CohortVars(), {{"COHORT_SIZE", "99999999999"}}),
                {"COHORT_SIZE='99999999999'", "too large"});
  ExpectInvalid(With(CohortVars(), {{"COHORT_LOCAL_RANK", "x"}}), {"COHORT_LOCAL_RANK='x'"});
  ExpectInvalid(With(CohortVars(), {{"COHORT_CROSS_SIZE", "-2"}}), {"COHORT_CROSS_SIZE='-2'"});
}

TEST(LauncherEnv, CohortRankMustBeBelowSize) {
  ExpectInvalid(With(CohortVars(), {{"COHORT_RANK", "4"}}),
                {"COHORT_RANK='4'", "less than", "COHORT_SIZE='4'"});
  ExpectInvalid(With(CohortVars(), {{"COHORT_LOCAL_RANK", "2"}, {"COHORT_LOCAL_SIZE", "2"}}),
                {"COHORT_LOCAL_RANK='2'", "COHORT_LOCAL_SIZE='2'"});
  ExpectInvalid(With(CohortVars(), {{"COHORT_CROSS_RANK", "3"}, {"COHORT_CROSS_SIZE", "1"}}),
                {"COHORT_CROSS_RANK='3'", "COHORT_CROSS_SIZE='1'"});
  ExpectInvalid(With(CohortVars(), {{"COHORT_LOCAL_SIZE", "5"}}),
                {"COHORT_LOCAL_SIZE='5'", "exceeds", "COHORT_SIZE='4'"});
}

TEST(LauncherEnv, CohortMalformedStoreAddress) {
  for (const char* bad : {"hostonly", "host:", ":29400", "host:0", "host:65536", "host:12ab",
                          "host:-1", "::1:29400", "[]:29400", "host:1234567"}) {
    SCOPED_TRACE(bad);
    ExpectInvalid(With(CohortVars(), {{"COHORT_STORE_ADDR", bad}}),
                  {std::string("COHORT_STORE_ADDR='") + bad + "'", "host:port"});
  }
}

TEST(LauncherEnv, SecretNeverAppearsInErrors) {
  Result<JobEnvironment> job =
      Parse(With(CohortVars(), {{"COHORT_SECRET", "s3cr3t"}, {"COHORT_STORE_ADDR", "bad"}}));
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message().find("s3cr3t"), std::string::npos);
}

// ---- precedence ----

TEST(LauncherEnv, CohortWinsOverEveryOtherLauncher) {
  Vars vars = CohortVars();
  for (const Vars& other : {MpirunVars(), SlurmVars(), TorchrunVars()}) {
    for (const auto& [name, value] : other) vars[name] = value;
  }
  Result<JobEnvironment> job = Parse(vars);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->launcher, "cohort");
  EXPECT_EQ(job->rank, 2);
}

TEST(LauncherEnv, MpirunWinsOverSlurmAndTorchrun) {
  Vars vars = MpirunVars();
  for (const Vars& other : {SlurmVars(), TorchrunVars()}) {
    for (const auto& [name, value] : other) vars.emplace(name, value);
  }
  Result<JobEnvironment> job = Parse(vars);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->launcher, "mpirun");
  EXPECT_EQ(job->rank, 1);
}

TEST(LauncherEnv, SlurmWinsOverPlainRankAndWorldSize) {
  Vars vars = SlurmVars();
  for (const auto& [name, value] : TorchrunVars()) vars.emplace(name, value);
  Result<JobEnvironment> job = Parse(vars);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->launcher, "slurm");
  EXPECT_EQ(job->rank, 5);
}

TEST(LauncherEnv, TorchrunStartedBySrunWinsOverSlurm) {
  // `srun torchrun ...`: SLURM_PROCID names the node's torchrun agent, not the worker.
  Vars vars = With(TorchrunVars(), {{"TORCHELASTIC_RUN_ID", "job7"}});
  for (const auto& [name, value] : SlurmVars()) vars.emplace(name, value);
  Result<JobEnvironment> job = Parse(vars);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->launcher, "torchrun");
  EXPECT_EQ(job->rank, 3);
}

// Started without a launcher, a script is a job of one process (Horovod's
// behaviour): rank 0 of 1 with a private loopback store.
void ExpectSingleProcess(const Vars& vars, const std::string& launcher) {
  Result<JobEnvironment> job = Parse(vars);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->launcher, launcher);
  EXPECT_EQ(job->rank, 0);
  EXPECT_EQ(job->size, 1);
  EXPECT_EQ(job->local_size, 1);
  EXPECT_TRUE(job->private_store);
  EXPECT_TRUE(job->rank0_hosts_store);
  EXPECT_EQ(job->store_host, "127.0.0.1");
  EXPECT_EQ(job->store_port, 0);
}

TEST(LauncherEnv, NoLauncherIsOneProcess) {
  ExpectSingleProcess({}, "none");
  ExpectSingleProcess({{"COHORT_RANK", ""}}, "none");
  ExpectInvalid({{"RANK", "0"}}, {"RANK is set but WORLD_SIZE is not"});
  ExpectInvalid({{"WORLD_SIZE", "2"}}, {"WORLD_SIZE is set but RANK is not"});
}

TEST(LauncherEnv, ForeignLauncherWithOneProcessNeedsNoAddress) {
  ExpectSingleProcess({{"RANK", "0"}, {"WORLD_SIZE", "1"}}, "torchrun");
  ExpectSingleProcess({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}, "slurm");
  // COHORT_STORE_ADDR still wins: the user asked for that store.
  Result<JobEnvironment> job =
      Parse({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"COHORT_STORE_ADDR", "127.0.0.1:40001"}});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_FALSE(job->private_store);
  EXPECT_EQ(job->store_port, 40001);
  // Two processes still need the address.
  ExpectInvalid({{"RANK", "0"}, {"WORLD_SIZE", "2"}}, {"MASTER_ADDR is not set"});
}

// ---- mpirun ----

TEST(LauncherEnv, MpirunSingleHost) {
  Result<JobEnvironment> job = Parse(MpirunVars());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->launcher, "mpirun");
  EXPECT_EQ(job->rank, 1);
  EXPECT_EQ(job->size, 4);
  EXPECT_EQ(job->local_rank, 1);
  EXPECT_EQ(job->local_size, 4);
  EXPECT_EQ(job->cross_rank, 0);
  EXPECT_EQ(job->cross_size, -1);
  EXPECT_EQ(job->store_host, "127.0.0.1");
  // 29400 + FNV-1a("1234567") % 1000: pinned, since every rank must agree.
  EXPECT_EQ(job->store_port, 29711);
  EXPECT_TRUE(job->rank0_hosts_store);
  EXPECT_EQ(job->secret, "");
}

TEST(LauncherEnv, MpirunStorePortAndSecretOverrides) {
  Result<JobEnvironment> job =
      Parse(With(Without(MpirunVars(), "OMPI_MCA_ess_base_jobid"),
                 {{"COHORT_STORE_PORT", "31000"}, {"COHORT_SECRET", "feed"}}));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->store_port, 31000);
  EXPECT_EQ(job->secret, "feed");
}

TEST(LauncherEnv, MpirunWithoutJobIdNeedsAPort) {
  ExpectInvalid(Without(MpirunVars(), "OMPI_MCA_ess_base_jobid"),
                {"OMPI_MCA_ess_base_jobid", "COHORT_STORE_PORT"});
}

TEST(LauncherEnv, MpirunAcrossHostsNeedsStoreAddress) {
  Vars vars = With(MpirunVars(), {{"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  ExpectInvalid(vars, {"COHORT_STORE_ADDR", "mpirun -x COHORT_STORE_ADDR="});
  ExpectInvalid(Without(MpirunVars(), "OMPI_COMM_WORLD_LOCAL_SIZE"), {"COHORT_STORE_ADDR"});
  Result<JobEnvironment> job = Parse(With(vars, {{"COHORT_STORE_ADDR", "host0:29400"}}));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->store_host, "host0");
  EXPECT_EQ(job->store_port, 29400);
  EXPECT_TRUE(job->rank0_hosts_store);
}

TEST(LauncherEnv, MpirunErrors) {
  ExpectInvalid(Without(MpirunVars(), "OMPI_COMM_WORLD_SIZE"), {"OMPI_COMM_WORLD_SIZE", "not set"});
  ExpectInvalid(With(MpirunVars(), {{"OMPI_COMM_WORLD_RANK", "4"}}),
                {"OMPI_COMM_WORLD_RANK='4'", "OMPI_COMM_WORLD_SIZE='4'"});
  ExpectInvalid(With(MpirunVars(), {{"OMPI_COMM_WORLD_LOCAL_RANK", "one"}}),
                {"OMPI_COMM_WORLD_LOCAL_RANK='one'"});
  ExpectInvalid(With(MpirunVars(), {{"COHORT_STORE_PORT", "70000"}}),
                {"COHORT_STORE_PORT='70000'"});
  ExpectInvalid(With(MpirunVars(), {{"COHORT_STORE_PORT", "0"}}), {"COHORT_STORE_PORT='0'"});
  ExpectInvalid(With(MpirunVars(), {{"COHORT_STORE_ADDR", "nocolon"}}),
                {"COHORT_STORE_ADDR='nocolon'"});
}

// ---- slurm ----

TEST(LauncherEnv, Slurm) {
  Result<JobEnvironment> job = Parse(SlurmVars());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->launcher, "slurm");
  EXPECT_EQ(job->rank, 5);
  EXPECT_EQ(job->size, 8);
  EXPECT_EQ(job->local_rank, 1);
  EXPECT_EQ(job->local_size, 2);  // node 2 is the third entry of "3(x2),2"
  EXPECT_EQ(job->cross_rank, 2);
  EXPECT_EQ(job->cross_size, 3);
  EXPECT_EQ(job->store_host, "gpu07");
  EXPECT_EQ(job->store_port, 29400 + 456);
  EXPECT_TRUE(job->rank0_hosts_store);
  EXPECT_EQ(job->secret, "");
}

// The batch script itself (srun forgotten) has SLURM_PROCID but no step.
TEST(LauncherEnv, SlurmWithoutSrunSaysToUseSrun) {
  ExpectInvalid(Without(SlurmVars(), "SLURM_STEP_ID"),
                {"SLURM_PROCID is set but SLURM_STEP_ID is not", "would wait for 7 ranks",
                 "run workers with srun"});
  // A one-task allocation runs fine without srun.
  Result<JobEnvironment> one =
      Parse(With(Without(SlurmVars(), "SLURM_STEP_ID"), {{"SLURM_PROCID", "0"},
                                                         {"SLURM_NTASKS", "1"},
                                                         {"SLURM_LOCALID", "0"},
                                                         {"SLURM_NODEID", "0"},
                                                         {"SLURM_NNODES", "1"},
                                                         {"SLURM_TASKS_PER_NODE", "1"},
                                                         {"COHORT_STORE_PORT", "31000"}}));
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->size, 1);
}

// Two steps of one allocation get different store ports.
TEST(LauncherEnv, SlurmStorePortIncludesTheStep) {
  Result<JobEnvironment> step0 = Parse(SlurmVars());
  Result<JobEnvironment> step1 = Parse(With(SlurmVars(), {{"SLURM_STEP_ID", "1"}}));
  ASSERT_TRUE(step0.ok() && step1.ok());
  EXPECT_EQ(step0->store_port, 29400 + 456);
  EXPECT_EQ(step1->store_port, 29400 + 457);
}

TEST(LauncherEnv, SlurmPrefersStepVariables) {
  Result<JobEnvironment> job = Parse(With(SlurmVars(), {{"SLURM_STEP_NODELIST", "gpu[08-09]"},
                                                        {"SLURM_STEP_NUM_TASKS", "6"},
                                                        {"SLURM_STEP_NUM_NODES", "2"},
                                                        {"SLURM_NODEID", "1"},
                                                        {"SLURM_STEP_TASKS_PER_NODE", "3(x2)"}}));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->size, 6);
  EXPECT_EQ(job->cross_size, 2);
  EXPECT_EQ(job->local_size, 3);
  EXPECT_EQ(job->store_host, "gpu08");
}

TEST(LauncherEnv, SlurmOverrides) {
  Result<JobEnvironment> job =
      Parse(With(Without(SlurmVars(), "SLURM_JOB_ID"), {{"COHORT_STORE_PORT", "31001"}}));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->store_host, "gpu07");
  EXPECT_EQ(job->store_port, 31001);
  job = Parse(With(Without(SlurmVars(), "SLURM_JOB_NODELIST"),
                   {{"COHORT_STORE_ADDR", "login1:5000"}, {"COHORT_SECRET", "beef"}}));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->store_host, "login1");
  EXPECT_EQ(job->store_port, 5000);
  EXPECT_EQ(job->secret, "beef");
}

TEST(LauncherEnv, SlurmErrors) {
  ExpectInvalid(Without(SlurmVars(), "SLURM_NTASKS"), {"SLURM_NTASKS", "not set"});
  ExpectInvalid(Without(SlurmVars(), "SLURM_JOB_ID"), {"SLURM_JOB_ID", "COHORT_STORE_PORT"});
  ExpectInvalid(With(SlurmVars(), {{"SLURM_JOB_ID", "12x"}}), {"SLURM_JOB_ID='12x'"});
  ExpectInvalid(Without(SlurmVars(), "SLURM_JOB_NODELIST"),
                {"SLURM_JOB_NODELIST", "COHORT_STORE_ADDR"});
  ExpectInvalid(With(SlurmVars(), {{"SLURM_JOB_NODELIST", "gpu[09-07]"}}),
                {"SLURM_JOB_NODELIST='gpu[09-07]'", "descending", "position 4"});
  ExpectInvalid(With(SlurmVars(), {{"SLURM_PROCID", "8"}}),
                {"SLURM_PROCID='8'", "SLURM_NTASKS='8'"});
  ExpectInvalid(With(SlurmVars(), {{"SLURM_NODEID", "3"}}),
                {"SLURM_NODEID='3'", "SLURM_NNODES='3'"});
  ExpectInvalid(With(SlurmVars(), {{"SLURM_TASKS_PER_NODE", "3(x2"}}),
                {"SLURM_TASKS_PER_NODE='3(x2'", "malformed"});
  ExpectInvalid(With(SlurmVars(), {{"SLURM_TASKS_PER_NODE", "4(x2)"}}),
                {"SLURM_TASKS_PER_NODE='4(x2)'", "describes 2 nodes"});
  ExpectInvalid(With(SlurmVars(), {{"SLURM_TASKS_PER_NODE", "1(x3)"}}),
                {"SLURM_LOCALID='1'", "SLURM_TASKS_PER_NODE='1'"});
}

// ---- torchrun ----

TEST(LauncherEnv, Torchrun) {
  Result<JobEnvironment> job = Parse(TorchrunVars());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->launcher, "torchrun");
  EXPECT_EQ(job->rank, 3);
  EXPECT_EQ(job->size, 8);
  EXPECT_EQ(job->local_rank, 3);
  EXPECT_EQ(job->local_size, 4);
  EXPECT_EQ(job->cross_rank, 0);
  EXPECT_EQ(job->cross_size, 2);
  EXPECT_EQ(job->store_host, "host0");
  EXPECT_EQ(job->store_port, 29501);  // torchrun's own store holds MASTER_PORT
  EXPECT_TRUE(job->rank0_hosts_store);
  EXPECT_EQ(job->secret, "");
}

TEST(LauncherEnv, TorchrunOverrides) {
  Result<JobEnvironment> job = Parse(With(TorchrunVars(), {{"COHORT_STORE_ADDR", "other:7000"}}));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->store_host, "other");
  EXPECT_EQ(job->store_port, 7000);
  job = Parse(With(Without(TorchrunVars(), "MASTER_PORT"), {{"COHORT_STORE_PORT", "7001"}}));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->store_host, "host0");
  EXPECT_EQ(job->store_port, 7001);
}

TEST(LauncherEnv, TorchrunErrors) {
  ExpectInvalid(Without(TorchrunVars(), "MASTER_ADDR"), {"MASTER_ADDR", "not set"});
  ExpectInvalid(Without(TorchrunVars(), "MASTER_PORT"), {"MASTER_PORT", "not set"});
  ExpectInvalid(With(TorchrunVars(), {{"MASTER_PORT", "http"}}), {"MASTER_PORT='http'"});
  ExpectInvalid(With(TorchrunVars(), {{"MASTER_PORT", "65535"}}),
                {"MASTER_PORT='65535'", "COHORT_STORE_PORT"});
  ExpectInvalid(With(TorchrunVars(), {{"WORLD_SIZE", "2"}}),
                {"RANK='3'", "less than", "WORLD_SIZE='2'"});
  ExpectInvalid(With(TorchrunVars(), {{"LOCAL_WORLD_SIZE", "3"}}),
                {"LOCAL_RANK='3'", "LOCAL_WORLD_SIZE='3'"});
}

// ---- node lists ----

std::vector<std::string> Expand(const std::string& list) {
  Result<std::vector<std::string>> hosts = ExpandSlurmNodeList(list);
  EXPECT_TRUE(hosts.ok()) << hosts.status().ToString();
  return hosts.ok() ? *hosts : std::vector<std::string>{};
}

using Names = std::vector<std::string>;

TEST(LauncherEnv, NodeListExpansion) {
  EXPECT_EQ(Expand("single"), Names({"single"}));
  EXPECT_EQ(Expand("a,b"), Names({"a", "b"}));
  EXPECT_EQ(Expand("node[01-03,07],gpu5"), Names({"node01", "node02", "node03", "node07", "gpu5"}));
  EXPECT_EQ(Expand("n[8-10]"), Names({"n8", "n9", "n10"}));
  EXPECT_EQ(Expand("n[098-101]"), Names({"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(Expand("n[5]"), Names({"n5"}));
  EXPECT_EQ(Expand("r[1-2]n[3-4]"), Names({"r1n3", "r1n4", "r2n3", "r2n4"}));
  EXPECT_EQ(Expand("n[1-2]-ib"), Names({"n1-ib", "n2-ib"}));
  EXPECT_EQ(Expand("a[1,3],b[2-3],c"), Names({"a1", "a3", "b2", "b3", "c"}));
  EXPECT_EQ(Expand("host.example.com"), Names({"host.example.com"}));
}

void ExpectBadNodeList(const std::string& list, const std::string& problem, int position) {
  SCOPED_TRACE(list);
  Result<std::vector<std::string>> hosts = ExpandSlurmNodeList(list);
  ASSERT_FALSE(hosts.ok());
  EXPECT_EQ(hosts.status().code(), Status::Code::kInvalidArgument);
  const std::string& message = hosts.status().message();
  EXPECT_NE(message.find("'" + list + "'"), std::string::npos) << message;
  EXPECT_NE(message.find(problem), std::string::npos) << message;
  EXPECT_NE(message.find("at position " + std::to_string(position)), std::string::npos) << message;
}

TEST(LauncherEnv, NodeListErrors) {
  ExpectBadNodeList("node[3-1]", "descending", 5);
  ExpectBadNodeList("node[01", "unclosed '['", 4);
  ExpectBadNodeList("node[01-", "unclosed '['", 4);
  ExpectBadNodeList("node[]", "expected a number, found ']'", 5);
  ExpectBadNodeList("node[a-b]", "expected a number, found 'a'", 5);
  ExpectBadNodeList("node[1-3x]", "expected ',' or ']', found 'x'", 8);
  ExpectBadNodeList("node[1[2]]", "expected ',' or ']', found '['", 6);
  ExpectBadNodeList("node]1", "unexpected ']'", 4);
  ExpectBadNodeList("", "empty host name", 0);
  ExpectBadNodeList("a,,b", "empty host name", 2);
  ExpectBadNodeList("a,", "empty host name", 2);
  ExpectBadNodeList(",a", "empty host name", 0);
  ExpectBadNodeList("a, b", "whitespace", 2);
  ExpectBadNodeList("n[0-99999999]", "too large", 2);
  ExpectBadNodeList("n[1-2000]m[1-2000]", "too many", 10);
  ExpectBadNodeList("n[1234567890123456789]", "too long", 2);
}

}  // namespace
}  // namespace cohort
