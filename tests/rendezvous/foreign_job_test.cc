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
  EXPECT_NE(refused.message().find("this mpirun job spans several hosts but has no secret: "
                                   "COHORT_SECRET is not set and the secret file cannot be used "
                                   "(none of COHORT_SECRET_FILE, XDG_CONFIG_HOME and HOME is set)"),
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
