// Multi-process tests of the LibTorch adapter (include/cohort/torch.h): runs
// torch_worker's modes under `cohort run` on 2 and 3 ranks, over shared memory
// and forced TCP. The worker checks every result against a single-process
// reference and exits non-zero on any difference.
//
// This file does not include torch: the worker is built only when CMake finds
// libtorch (COHORT_HAVE_TORCH), and these tests are skipped otherwise.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "support/child_process.h"

namespace cohort::testing {
namespace {

struct Job {
  int np;
  std::string transport;
};

// Names the job in ctest's listing instead of printing its bytes.
void PrintTo(const Job& job, std::ostream* os) { *os << job.np << " ranks, " << job.transport; }

class TorchAdapter : public ::testing::TestWithParam<Job> {
 protected:
  void SetUp() override {
#ifndef COHORT_HAVE_TORCH
    GTEST_SKIP() << "built without libtorch: the LibTorch adapter's worker does not exist";
#endif
  }

  // Runs `torch_worker mode` and expects every rank to print "<mode> ok".
  void ExpectOk(const std::string& mode) {
    Finished f =
        RunCohort({"run", "-np", std::to_string(GetParam().np), "--timeout", "60", "--transport",
                   GetParam().transport, "--", TestBinary("torch_worker"), mode},
                  150);
    EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
    int ok = 0;
    for (const std::string& line : Lines(f.out)) ok += Contains(line, mode + " ok") ? 1 : 0;
    EXPECT_EQ(ok, GetParam().np) << f.out << f.err;
  }
};

// Every function, every supported dtype, against a single-process reference.
TEST_P(TorchAdapter, CollectivesMatchTheReferenceForEveryDtype) { ExpectOk("collectives"); }

// Bad input and ranks that disagree throw errors that say what and where.
TEST_P(TorchAdapter, ErrorsSayWhatWasWrong) { ExpectOk("errors"); }

// DistributedOptimizer on N shards ends where one process on the global batch does.
TEST_P(TorchAdapter, DistributedOptimizerMatchesOneProcess) { ExpectOk("optimizer"); }

INSTANTIATE_TEST_SUITE_P(Jobs, TorchAdapter,
                         ::testing::Values(Job{2, "auto"}, Job{3, "auto"}, Job{3, "tcp"}),
                         [](const auto& info) {
                           return std::to_string(info.param.np) + "ranks_" + info.param.transport;
                         });

}  // namespace
}  // namespace cohort::testing
