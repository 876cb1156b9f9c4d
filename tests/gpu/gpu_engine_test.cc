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

class GpuEngineJob : public ::testing::TestWithParam<int> {};

// Ranks sharing one GPU: IPC; with 3 ranks also a process set of ranks 0 and 2.
TEST_P(GpuEngineJob, GpuTensorsEqualTheHostPathOverIpc) {
  ExpectAllRanks(RunEngineWorkers(GetParam(), {"check"}), GetParam(), kEqualsHost);
}

INSTANTIATE_TEST_SUITE_P(Ranks, GpuEngineJob, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "Ranks"; });

TEST(GpuEngine, GpuTensorsEqualTheHostPathOverNccl) {
  ExpectAllRanks(RunEngineWorkers(2, {"--gpu-per-rank", "--nccl", "check"}), 2, kEqualsHost);
}

TEST(GpuEngine, GpuTensorsEqualTheHostPathStaged) {
  ExpectAllRanks(RunEngineWorkers(2, {"check"}, {{"COHORT_GPU_TRANSPORT", "staged"}}), 2,
                 kEqualsHost);
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
