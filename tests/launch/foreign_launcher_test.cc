// Workers started by a foreign launcher on this host: the test plays srun or
// mpirun, starting each rank with the variables that launcher sets, and the
// collectives must come out exact. (The same across emulated hosts:
// tests/multihost/.)
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rendezvous/local_address.h"
#include "support/child_process.h"

namespace cohort::testing {
namespace {

// Starts one worker per entry of `envs` and expects each to check every
// collective exactly.
void ExpectAllExact(const std::vector<std::map<std::string, std::string>>& envs) {
  const std::vector<std::vector<std::string>> argvs(
      envs.size(), {TestBinary("collectives_worker"), "all", "quick"});
  const std::vector<Finished> results = RunTogether(argvs, envs, 120);
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_EQ(results[r].exit_code, 0) << "rank " << r << ": " << results[r].out << results[r].err;
    EXPECT_TRUE(Contains(results[r].out, "rank " + std::to_string(r) + ": ")) << results[r].out;
  }
}

TEST(ForeignLauncher, SrunVariablesOnOneHost) {
  const std::string port = std::to_string(FreePort());
  std::vector<std::map<std::string, std::string>> envs;
  for (int r = 0; r < 3; ++r) {
    envs.push_back({{"SLURM_PROCID", std::to_string(r)},
                    {"SLURM_NTASKS", "3"},
                    {"SLURM_LOCALID", std::to_string(r)},
                    {"SLURM_NODEID", "0"},
                    {"SLURM_NNODES", "1"},
                    {"SLURM_TASKS_PER_NODE", "3"},
                    {"SLURM_JOB_NODELIST", "localhost"},
                    {"SLURM_JOB_ID", "77"},
                    {"SLURM_STEP_ID", "0"},
                    {"COHORT_STORE_PORT", port},
                    {"COHORT_SECRET", "srun-test-secret"},
                    {"COHORT_TIMEOUT", "30"}});
  }
  ExpectAllExact(envs);
}

TEST(ForeignLauncher, MpirunVariablesOnOneHost) {
  const std::string port = std::to_string(FreePort());
  std::vector<std::map<std::string, std::string>> envs;
  for (int r = 0; r < 3; ++r) {
    envs.push_back({{"OMPI_COMM_WORLD_RANK", std::to_string(r)},
                    {"OMPI_COMM_WORLD_SIZE", "3"},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(r)},
                    {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"},
                    {"OMPI_COMM_WORLD_NODE_RANK", "0"},
                    {"COHORT_STORE_PORT", port},
                    {"COHORT_SECRET", "mpirun-test-secret"},
                    {"COHORT_TIMEOUT", "30"}});
  }
  ExpectAllExact(envs);
}

// Without COHORT_SECRET the ranks derive the job's secret from a private
// file (COHORT_SECRET_FILE), created by whichever rank comes first.
TEST(ForeignLauncher, MpirunWithoutSecretUsesThePrivateSecretFile) {
  char dir[] = "/tmp/cohort-secret-file-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/secret";
  const std::string port = std::to_string(FreePort());
  std::vector<std::map<std::string, std::string>> envs;
  for (int r = 0; r < 3; ++r) {
    envs.push_back({{"OMPI_COMM_WORLD_RANK", std::to_string(r)},
                    {"OMPI_COMM_WORLD_SIZE", "3"},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(r)},
                    {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"},
                    {"COHORT_STORE_PORT", port},
                    {"COHORT_SECRET", ""},
                    {"COHORT_SECRET_FILE", file},
                    {"COHORT_TIMEOUT", "30"}});
  }
  ExpectAllExact(envs);
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(std::system(("rm -rf " + std::string(dir)).c_str()), 0);
}

// torchrun on one host in a bare container: no HOME, XDG_CONFIG_HOME or
// COHORT_SECRET, MASTER_ADDR a routable address of this host. The job has
// only a guessable secret, so its store and mesh stay on loopback, and it
// runs (rendezvous/foreign_job.h).
TEST(ForeignLauncher, TorchrunWithoutSecretRunsOnLoopback) {
  Result<std::string> routable = FirstNonLoopbackAddress();
  const std::string port = std::to_string(FreePort());
  std::vector<std::map<std::string, std::string>> envs;
  for (int r = 0; r < 2; ++r) {
    envs.push_back({{"RANK", std::to_string(r)},
                    {"WORLD_SIZE", "2"},
                    {"LOCAL_RANK", std::to_string(r)},
                    {"LOCAL_WORLD_SIZE", "2"},
                    {"MASTER_ADDR", routable.ok() ? *routable : "localhost"},
                    {"MASTER_PORT", port},
                    {"TORCHELASTIC_RUN_ID", "bare"},
                    {"HOME", ""},
                    {"XDG_CONFIG_HOME", ""},
                    {"COHORT_SECRET", ""},
                    {"COHORT_SECRET_FILE", ""},
                    {"COHORT_TIMEOUT", "30"}});
  }
  ExpectAllExact(envs);
}

}  // namespace
}  // namespace cohort::testing
