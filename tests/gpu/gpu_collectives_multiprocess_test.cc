// The GPU collectives across real processes, over the fake CUDA API
// (tests/gpu/support): every collective x dtype x op equals the CPU path on
// each transport (CUDA IPC among ranks sharing one GPU, NCCL with a GPU per
// rank, staged flat and hierarchical across emulated hosts), and the failure
// paths: a forced transport that cannot run, an IPC setup that fails on one
// rank, a killed rank, ranks that disagree, and no GPU memory left behind.
// The same worker runs with --api real on a GPU machine (tools/device-check.sh).
#include <gtest/gtest.h>

#include <signal.h>

#include <map>
#include <string>
#include <vector>

#include "support/child_process.h"

namespace cohort::testing {
namespace {

// 64 KiB IPC buffers: the "several chunks" sizes stay small and fast.
Finished RunGpuWorkers(int np, const std::vector<std::string>& args,
                       std::map<std::string, std::string> env = {}, double seconds = 180) {
  env.emplace("COHORT_GPU_BUFFER_BYTES", "64K");
  env.emplace("COHORT_KERNEL_CACHE_DIR", "off");
  std::vector<std::string> cmd = {"run",
                                  "-np",
                                  std::to_string(np),
                                  "--timeout",
                                  "60",
                                  "--",
                                  TestBinary("gpu_collectives_worker"),
                                  "--api",
                                  "fake"};
  cmd.insert(cmd.end(), args.begin(), args.end());
  return RunCohort(cmd, seconds, env);
}

int CountLines(const std::string& text, const std::string& part) {
  int n = 0;
  for (const std::string& line : Lines(text)) n += Contains(line, part) ? 1 : 0;
  return n;
}

void ExpectEqualsCpu(const Finished& f, int np, const std::string& transport) {
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "every GPU collective equals the CPU path"), np) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "transport: " + transport), np) << f.out;
}

class GpuIpcJob : public ::testing::TestWithParam<int> {};

// Ranks sharing one GPU: CUDA IPC.
TEST_P(GpuIpcJob, EveryCollectiveDtypeAndOpEqualsTheCpuPath) {
  ExpectEqualsCpu(RunGpuWorkers(GetParam(), {"check"}), GetParam(), "ipc among");
}

INSTANTIATE_TEST_SUITE_P(Ranks, GpuIpcJob, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "ranks";
                         });

// A GPU per rank and NCCL loadable: NCCL (int16, bool and Adasum fall back).
TEST(GpuTransports, NcclWithAGpuPerRank) {
  ExpectEqualsCpu(RunGpuWorkers(3, {"--gpu-per-rank", "--nccl", "check"}), 3, "nccl among");
}

TEST(GpuTransports, StagedWhenForced) {
  ExpectEqualsCpu(RunGpuWorkers(3, {"check"}, {{"COHORT_GPU_TRANSPORT", "staged"}}), 3,
                  "staged among");
}

// Two emulated hosts of two ranks: IPC reduce-scatter on each host, the CPU
// allreduce across, IPC allgather.
TEST(GpuTransports, HierarchicalAcrossTwoHosts) {
  ExpectEqualsCpu(RunGpuWorkers(4, {"check"}, {{"COHORT_TEST_HOSTS", "0,0,1,1"}}), 4,
                  "staged among 4 ranks on 2 hosts (hierarchical)");
}

// Hosts of different sizes: every rank stages its whole tensor.
TEST(GpuTransports, UnevenHostsStageFlat) {
  Finished f = RunGpuWorkers(3, {"check", "quick"}, {{"COHORT_TEST_HOSTS", "0,0,1"}});
  ExpectEqualsCpu(f, 3, "staged among 3 ranks on 2 hosts,");
}

TEST(GpuTransports, ForcedNcclOnASharedGpuIsRefusedOnEveryRank) {
  Finished f = RunGpuWorkers(2, {"--nccl", "check"}, {{"COHORT_GPU_TRANSPORT", "nccl"}});
  EXPECT_NE(f.exit_code, 0);
  EXPECT_EQ(CountLines(f.out,
                       "COHORT_GPU_TRANSPORT=nccl, but NCCL needs a GPU per rank and "
                       "ranks 0 and 1 share GPU fake-"),
            2)
      << f.out << f.err;
}

TEST(GpuTransports, ForcedNcclWithoutNcclNamesWhy) {
  Finished f = RunGpuWorkers(2, {"--gpu-per-rank", "check"}, {{"COHORT_GPU_TRANSPORT", "nccl"}});
  EXPECT_NE(f.exit_code, 0);
  EXPECT_EQ(CountLines(f.out,
                       "COHORT_GPU_TRANSPORT=nccl, but rank 0: NCCL not found (fake CUDA "
                       "without NCCL)"),
            2)
      << f.out << f.err;
}

// Rank 1 cannot map its peers' buffers: under auto every rank agrees to
// stage instead (and is still exact); forced IPC fails everywhere naming it.
TEST(GpuTransports, IpcFailureOnOneRankFallsBackOrIsNamed) {
  Finished fallback =
      RunGpuWorkers(3, {"check", "quick"}, {{"COHORT_FAKE_GPU_FAIL", "IpcOpenMemHandle@1"}});
  ExpectEqualsCpu(fallback, 3, "staged among 3 ranks on 1 host");
  Finished forced = RunGpuWorkers(
      3, {"check", "quick"},
      {{"COHORT_FAKE_GPU_FAIL", "IpcOpenMemHandle@1"}, {"COHORT_GPU_TRANSPORT", "ipc"}});
  EXPECT_NE(forced.exit_code, 0);
  EXPECT_EQ(CountLines(forced.out,
                       "COHORT_GPU_TRANSPORT=ipc, but CUDA IPC does not work here: "
                       "CUDA IPC among the ranks of a host failed: rank 1 (host "),
            3)
      << forced.out << forced.err;
  EXPECT_EQ(CountLines(forced.out, "could not map its peers' buffers: mapping rank 0 (host "), 3)
      << forced.out;
}

TEST(GpuFailures, RanksThatDisagreeGetAMismatch) {
  Finished f = RunGpuWorkers(2, {"mismatch"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out,
                       "rank 0: mismatch across ranks: rank 0 called allreduce of 200 "
                       "float32 elements (op sum) but rank 1 called allreduce of 300"),
            1)
      << f.out;
  EXPECT_EQ(CountLines(f.out, ": mismatch across ranks: "), 2) << f.out;
}

// A rank killed during an allreduce: every survivor fails fast, naming it,
// on each transport.
TEST(GpuFailures, KilledRankIsNamedBySurvivors) {
  const std::vector<std::map<std::string, std::string>> transports = {
      {{"COHORT_GPU_TRANSPORT", "ipc"}}, {{"COHORT_GPU_TRANSPORT", "staged"}}};
  for (std::map<std::string, std::string> env : transports) {
    env["COHORT_GPU_BUFFER_BYTES"] = "64K";
    auto workers = StartWithTorchrunVariables(
        3, {TestBinary("gpu_collectives_worker"), "--api", "fake", "die"}, env);
    for (int r = 0; r < 2; ++r) {
      Finished f = workers[r]->Finish(Deadline::AfterSeconds(40));
      EXPECT_EQ(f.exit_code, 0) << env["COHORT_GPU_TRANSPORT"] << " rank " << r << ": " << f.out
                                << f.err;
      EXPECT_TRUE(Contains(f.out, "failed as expected")) << f.out;
      EXPECT_TRUE(Contains(f.out, "rank 2 (host ")) << f.out;
      EXPECT_LT(f.seconds, 30) << "a survivor noticed the dead rank too late";
    }
    Finished dead = workers[2]->Finish(Deadline::AfterSeconds(30));
    EXPECT_EQ(dead.exit_code, 128 + SIGKILL);
  }
}

TEST(GpuFailures, NoGpuMemoryIsLeftBehind) {
  Finished f = RunGpuWorkers(3, {"leak"});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out,
                       "after shutdown: 0 device allocations, 0 pinned, 0 IPC mappings, 0 "
                       "streams, 0 events"),
            3)
      << f.out;
}

}  // namespace
}  // namespace cohort::testing
