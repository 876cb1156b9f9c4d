// GPU tensors through the engine and the C API, across real processes, over
// the fake CUDA API (tests/gpu/gpu_engine_worker.cc): every dtype x op on
// GPU tensors equals the host path through the engine, on each transport
// (IPC among ranks sharing a GPU, NCCL with a GPU per rank, staged), with
// fusion on the device and a process set; the refusals (host and GPU
// buffers mixed, a second device, unsupported forms, ranks disagreeing on
// host or GPU); and a GPU tensor without a driver named as such.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <map>
#include <string>
#include <vector>

#include "support/child_process.h"

namespace cohort::testing {
namespace {

Finished RunEngineWorkers(int np, const std::vector<std::string>& args,
                          std::map<std::string, std::string> env = {}) {
  env.emplace("COHORT_GPU_BUFFER_BYTES", "64K");
  env.emplace("COHORT_KERNEL_CACHE_DIR", "off");
  env.emplace("COHORT_LOG_LEVEL", "info");  // the engine logs each set's GPU transport
  std::vector<std::string> cmd = {
      "run", "-np", std::to_string(np), "--timeout", "60", "--", TestBinary("gpu_engine_worker")};
  cmd.insert(cmd.end(), args.begin(), args.end());
  return RunCohort(cmd, 180, env);
}

int CountLines(const std::string& text, const std::string& part) {
  int n = 0;
  for (const std::string& line : Lines(text)) n += Contains(line, part) ? 1 : 0;
  return n;
}

void ExpectAllRanks(const Finished& f, int np, const std::string& line) {
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, line), np) << f.out << f.err;
}

const char kEqualsHost[] = "every GPU tensor through the engine equals the host path";

// Every rank's engine set up the job's GPU collectives on `transport`.
void ExpectTransport(const Finished& f, int np, const std::string& transport) {
  EXPECT_EQ(CountLines(f.out + f.err, "GPU collectives of process set 0: " + transport), np)
      << f.out << f.err;
}

class GpuEngineJob : public ::testing::TestWithParam<int> {};

// Ranks sharing one GPU: IPC; with 3 ranks also a process set of ranks 0 and 2.
TEST_P(GpuEngineJob, GpuTensorsEqualTheHostPathOverIpc) {
  const Finished f = RunEngineWorkers(GetParam(), {"check"});
  ExpectAllRanks(f, GetParam(), kEqualsHost);
  ExpectTransport(f, GetParam(), "ipc");
  if (GetParam() == 3) {  // the process set of ranks 0 and 2 has GPU collectives of its own
    EXPECT_EQ(CountLines(f.out + f.err, "GPU collectives of process set 1: ipc among 2 ranks"), 2)
        << f.out << f.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, GpuEngineJob, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "Ranks"; });

TEST(GpuEngine, GpuTensorsEqualTheHostPathOverNccl) {
  const Finished f = RunEngineWorkers(2, {"--gpu-per-rank", "--nccl", "check"});
  ExpectAllRanks(f, 2, kEqualsHost);
  ExpectTransport(f, 2, "nccl");
}

TEST(GpuEngine, GpuTensorsEqualTheHostPathStaged) {
  const Finished f = RunEngineWorkers(2, {"check"}, {{"COHORT_GPU_TRANSPORT", "staged"}});
  ExpectAllRanks(f, 2, kEqualsHost);
  ExpectTransport(f, 2, "staged");
}

TEST(GpuEngine, MixedOrUnsupportedTensorsAreRefusedWithTheirReason) {
  ExpectAllRanks(RunEngineWorkers(2, {"refuse"}), 2, "every refusal as expected");
}

// No fake: the real search finds no driver on a machine without a GPU.
TEST(GpuEngine, AGpuTensorWithoutADriverNamesIt) {
  if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    dlclose(driver);
    GTEST_SKIP() << "this machine has a CUDA driver (libcuda.so.1 loads)";
  }
  const std::string empty = ::testing::TempDir() + "no-cuda-here";
  ::mkdir(empty.c_str(), 0700);
  ExpectAllRanks(RunEngineWorkers(2, {"missing"}, {{"COHORT_CUDA_LIBRARY_PATH", empty}}), 2,
                 "the missing driver is named");
}

}  // namespace
}  // namespace cohort::testing
