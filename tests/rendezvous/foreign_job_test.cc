// Tests of the secret and store address of jobs under srun, mpirun and
// torchrun (rendezvous/foreign_job.h).
#include "rendezvous/foreign_job.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

#include "rendezvous/local_address.h"

namespace cohort {
namespace {

class ForeignJob : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/cohort-foreign-job-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { ASSERT_EQ(std::system(("rm -rf " + dir_).c_str()), 0); }

  static EnvLookup Env(const std::map<std::string, std::string>& vars) {
    return [vars](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }

  // An mpirun job's placement: `hosts` hosts of 2 ranks each.
  static JobEnvironment Job(int hosts, int port = 29500) {
    JobEnvironment job;
    job.launcher = "mpirun";
    job.rank = 0;
    job.size = 2 * hosts;
    job.local_size = 2;
    job.store_host = "127.0.0.1";
    job.store_port = port;
    job.rank0_hosts_store = true;
    return job;
  }

  std::string dir_;
};

TEST_F(ForeignJob, SecretFileIsCreatedPrivateAndReused) {
  const std::string path = dir_ + "/home/.config/cohort/secret";
  Result<std::string> first = ReadOrCreateSecretFile(path);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->size(), 64u);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  for (const char* dir : {"/home", "/home/.config", "/home/.config/cohort"}) {
    ASSERT_EQ(::stat((dir_ + dir).c_str(), &st), 0) << dir;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << dir;
  }
  EXPECT_EQ(*ReadOrCreateSecretFile(path), *first);
}

TEST_F(ForeignJob, RanksRacingToCreateTheFileAgree) {
  const std::string path = dir_ + "/secret";
  std::vector<std::string> seen(8);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 8; ++r) {
    ranks.emplace_back([&, r] {
      Result<std::string> s = ReadOrCreateSecretFile(path);
      seen[r] = s.ok() ? *s : s.status().ToString();
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 1; r < 8; ++r) EXPECT_EQ(seen[r], seen[0]);
  EXPECT_EQ(seen[0].size(), 64u) << seen[0];
}

TEST_F(ForeignJob, SecretFileOthersMayReadIsRefused) {
  const std::string path = dir_ + "/secret";
  std::ofstream(path) << std::string(64, 'a') << "\n";
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  Status s = ReadOrCreateSecretFile(path).status();
  EXPECT_EQ(s.message(), path + " may be read by others (mode 0644): `chmod 600 " + path + "`");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  std::ofstream(path) << "short\n";
  EXPECT_NE(ReadOrCreateSecretFile(path).status().message().find("holds no secret"),
            std::string::npos);
}

TEST_F(ForeignJob, RanksDeriveOneSecretPerJobFromTheFile) {
  const EnvLookup env = Env({{"HOME", dir_}});
  JobEnvironment rank0 = Job(2), rank1 = Job(2), other_job = Job(2, 29501);
  rank1.rank = 1;
  ASSERT_TRUE(ProtectForeignJob(env, &rank0).ok());
  ASSERT_TRUE(ProtectForeignJob(env, &rank1).ok());
  ASSERT_TRUE(ProtectForeignJob(env, &other_job).ok());
  const std::string file = *ReadOrCreateSecretFile(dir_ + "/.config/cohort/secret");
  EXPECT_EQ(rank0.secret, file + "/mpirun/127.0.0.1:29500");
  EXPECT_EQ(rank1.secret, rank0.secret);
  EXPECT_NE(other_job.secret, rank0.secret);
  // COHORT_SECRET (already in the job) wins.
  JobEnvironment given = Job(2);
  given.secret = "beef";
  ASSERT_TRUE(ProtectForeignJob(env, &given).ok());
  EXPECT_EQ(given.secret, "beef");
}

TEST_F(ForeignJob, MultiHostWithoutSecretNeedsAnOptIn) {
  JobEnvironment job = Job(2);
  Status refused = ProtectForeignJob(Env({}), &job);
  EXPECT_EQ(refused.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(refused.message().find("this mpirun job has no secret (COHORT_SECRET is not set and "
                                   "the secret file cannot be used: none of COHORT_SECRET_FILE, "
                                   "XDG_CONFIG_HOME and HOME is set), and it spans several hosts"),
            std::string::npos)
      << refused.message();
  EXPECT_NE(refused.message().find("COHORT_ALLOW_INSECURE=1"), std::string::npos);
  ASSERT_TRUE(ProtectForeignJob(Env({{"COHORT_ALLOW_INSECURE", "1"}}), &job).ok());
  EXPECT_EQ(job.secret, "cohort-unprotected-job@127.0.0.1:29500");
  // One host: allowed with a warning.
  JobEnvironment single = Job(1);
  ASSERT_TRUE(ProtectForeignJob(Env({}), &single).ok());
  EXPECT_EQ(single.secret, "cohort-unprotected-job@127.0.0.1:29500");
}

// torchrun's variables on one host, no HOME, XDG_CONFIG_HOME or COHORT_SECRET
// (a container): the store is reachable only where the job's ranks are, on
// loopback, since its secret is guessable; MASTER_ADDR (a routable address)
// would have let anyone on the network join with that secret.
TEST_F(ForeignJob, OneHostWithoutSecretKeepsItsStoreOnLoopback) {
  Result<std::string> routable = FirstNonLoopbackAddress();
  const std::string master = routable.ok() ? *routable : "192.0.2.1";
  const EnvLookup env = Env({{"RANK", "0"},
                             {"WORLD_SIZE", "2"},
                             {"LOCAL_RANK", "0"},
                             {"LOCAL_WORLD_SIZE", "2"},
                             {"MASTER_ADDR", master},
                             {"MASTER_PORT", "29500"},
                             {"TORCHELASTIC_RUN_ID", "x"}});
  Result<JobEnvironment> job = ParseJobEnvironment(env);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_TRUE(ProtectForeignJob(env, &*job).ok());
  EXPECT_EQ(job->store_host, "127.0.0.1");
  EXPECT_EQ(job->store_port, 29501);
  EXPECT_EQ(StoreBindAddress(*job), "127.0.0.1");
  EXPECT_EQ(job->secret, "cohort-unprotected-job@127.0.0.1:29501");
}

// Where the store must listen beyond loopback (an address given with
// COHORT_STORE_ADDR, an interface for the mesh, or several hosts) a job
// without a secret is refused, saying how to give it one, unless the user
// opts in with COHORT_ALLOW_INSECURE=1.
TEST_F(ForeignJob, BeyondLoopbackWithoutSecretNeedsAnOptIn) {
  const std::string how =
      "Export the same random COHORT_SECRET to every rank (e.g. `export "
      "COHORT_SECRET=$(openssl rand -hex 32)`), or set COHORT_ALLOW_INSECURE=1 to let anyone "
      "who can reach its ports join the job";
  JobEnvironment job = Job(1);
  job.launcher = "torchrun";
  job.store_host = "192.0.2.1";  // as COHORT_STORE_ADDR gave it
  Status refused = ProtectForeignJob(Env({{"COHORT_STORE_ADDR", "192.0.2.1:29500"}}), &job);
  EXPECT_EQ(refused.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(refused.message(),
            "this torchrun job has no secret (COHORT_SECRET is not set and the secret file "
            "cannot be used: none of COHORT_SECRET_FILE, XDG_CONFIG_HOME and HOME is set), and "
            "its store's address, 192.0.2.1:29500 (COHORT_STORE_ADDR), is beyond loopback. " +
                how);
  ASSERT_TRUE(
      ProtectForeignJob(
          Env({{"COHORT_STORE_ADDR", "192.0.2.1:29500"}, {"COHORT_ALLOW_INSECURE", "1"}}), &job)
          .ok());
  EXPECT_EQ(job.store_host, "192.0.2.1");
  EXPECT_EQ(job.secret, "cohort-unprotected-job@192.0.2.1:29500");

  JobEnvironment meshed = Job(1);
  refused = ProtectForeignJob(Env({{"COHORT_NETWORK_INTERFACE", "eth0"}}), &meshed);
  EXPECT_EQ(refused.message(),
            "this mpirun job has no secret (COHORT_SECRET is not set and the secret file cannot "
            "be used: none of COHORT_SECRET_FILE, XDG_CONFIG_HOME and HOME is set), and its "
            "ranks listen on network interface eth0 (COHORT_NETWORK_INTERFACE), beyond "
            "loopback. " +
                how);

  JobEnvironment several = Job(2);
  refused = ProtectForeignJob(Env({}), &several);
  EXPECT_EQ(refused.message(),
            "this mpirun job has no secret (COHORT_SECRET is not set and the secret file cannot "
            "be used: none of COHORT_SECRET_FILE, XDG_CONFIG_HOME and HOME is set), and it spans "
            "several hosts, so its store and ranks listen beyond loopback. " +
                how);
  EXPECT_EQ(ProtectForeignJob(Env({{"COHORT_ALLOW_INSECURE", "yes"}}), &several).message(),
            "COHORT_ALLOW_INSECURE='yes' is not 0 or 1");
}

TEST_F(ForeignJob, StoreListensOnlyWhereTheJobReachesIt) {
  JobEnvironment job = Job(1);
  EXPECT_EQ(StoreBindAddress(job), "127.0.0.1");
  job.store_host = "localhost";
  EXPECT_EQ(StoreBindAddress(job), "127.0.0.1");
  job.store_host = "192.0.2.1";  // TEST-NET-1: not this host's
  EXPECT_EQ(StoreBindAddress(job), "0.0.0.0");
}

}  // namespace
}  // namespace cohort
