// Multi-process tests of the collectives: real workers under `cohort run`
// (or under torchrun-style variables when the test must outlive a dying
// rank), over shared memory and over forced TCP, with 2, 3 and 4 ranks.
#include <gtest/gtest.h>

#include <signal.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/child_process.h"

namespace cohort::testing {
namespace {

struct JobShape {
  int np;
  std::string transport;  // "auto" (shared memory on one host) or "tcp"
};

std::string Name(const ::testing::TestParamInfo<JobShape>& info) {
  return std::to_string(info.param.np) + "ranks_" + info.param.transport;
}

Finished RunWorkers(int np, const std::string& transport, const std::vector<std::string>& args,
                    double seconds, std::map<std::string, std::string> env = {}) {
  std::vector<std::string> cmd = {"run",       "-np", std::to_string(np),
                                  "--timeout", "60",  "--transport",
                                  transport,   "--",  TestBinary("collectives_worker")};
  cmd.insert(cmd.end(), args.begin(), args.end());
  return RunCohort(cmd, seconds, env);
}

int CountLines(const std::string& text, const std::string& part) {
  int n = 0;
  for (const std::string& line : Lines(text)) n += Contains(line, part) ? 1 : 0;
  return n;
}

class CollectivesJob : public ::testing::TestWithParam<JobShape> {};

// Every collective, dtype and op at sizes 0, 1, odd and tens of MiB, exact.
TEST_P(CollectivesJob, EveryCollectiveDtypeAndOpIsExact) {
  const JobShape& shape = GetParam();
  Finished f = RunWorkers(shape.np, shape.transport, {"all"}, 200);
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "collective checks exact"), shape.np) << f.out << f.err;
}

// Arguments that disagree: every rank gets kMismatch naming the ranks, no hang.
TEST_P(CollectivesJob, CountMismatchFailsOnEveryRank) {
  const JobShape& shape = GetParam();
  Finished f = RunWorkers(shape.np, shape.transport, {"mismatch"}, 60);
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "mismatch across ranks"), shape.np) << f.out;
  EXPECT_EQ(CountLines(f.out, "allreduce of 101 float32 elements"), shape.np) << f.out;
}

// Per-rank counts that disagree in an allgather: kMismatch on every rank.
TEST_P(CollectivesJob, AllgatherCountMismatchFailsOnEveryRank) {
  const JobShape& shape = GetParam();
  Finished f = RunWorkers(shape.np, shape.transport, {"mismatch", "allgather"}, 60);
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "mismatch across ranks"), shape.np) << f.out;
  EXPECT_EQ(CountLines(f.out, "allgather of"), shape.np) << f.out;
}

// Allgather around the chunk size of 4 KiB slots (shared memory) or over the
// ring (tcp): even and uneven blocks, zero-count ranks, in place, exact.
TEST_P(CollectivesJob, AllgatherAroundTheChunkSizeIsExact) {
  const JobShape& shape = GetParam();
  Finished f = RunWorkers(shape.np, shape.transport, {"allgather", "4096"}, 120,
                          {{"COHORT_SHM_SLOT_BYTES", "4096"}});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "allgather checks exact"), shape.np) << f.out << f.err;
}

// A bad argument on one rank fails that rank and, through it, all others.
TEST_P(CollectivesJob, InvalidRootOnOneRankFailsAll) {
  const JobShape& shape = GetParam();
  Finished f = RunWorkers(shape.np, shape.transport, {"badarg"}, 60);
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "is not a rank of this job"), shape.np) << f.out;
}

// The plain-C ABI gives the same results and errors as the C++ API.
TEST_P(CollectivesJob, PlainCAbi) {
  const JobShape& shape = GetParam();
  Finished f = RunWorkers(shape.np, shape.transport, {"capi"}, 60);
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "invalid data type value 99"), shape.np) << f.out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CollectivesJob,
                         ::testing::Values(JobShape{2, "auto"}, JobShape{3, "auto"},
                                           JobShape{4, "auto"}, JobShape{2, "tcp"},
                                           JobShape{3, "tcp"}, JobShape{4, "tcp"}),
                         Name);

// The link-based algorithms also run over shared-memory links when forced.
TEST(CollectivesAlgorithms, RingAndRecursiveDoublingOverSharedMemoryLinks) {
  for (const char* algorithm : {"ring", "recursive_doubling"}) {
    Finished f =
        RunWorkers(3, "auto", {"all", "quick"}, 120, {{"COHORT_ALLREDUCE_ALGORITHM", algorithm}});
    EXPECT_EQ(f.exit_code, 0) << algorithm << "\n" << f.out << f.err;
    EXPECT_EQ(CountLines(f.out, "collective checks exact"), 3) << algorithm;
  }
}

// Small chunks and slots force many pipeline steps and slot reuse.
TEST(CollectivesAlgorithms, TinyChunksAndSlots) {
  Finished f = RunWorkers(3, "auto", {"all", "quick"}, 120,
                          {{"COHORT_CHUNK_BYTES", "64"},
                           {"COHORT_SHM_SLOT_BYTES", "4096"},
                           {"COHORT_SMALL_MESSAGE_BYTES", "16"}});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "collective checks exact"), 3);
}

// The single-copy path (process_vm_readv/writev) from 1 byte on, with 4 KiB
// slots (4 KiB chunks, many per call; the table of buffers in one slot):
// every collective, dtype and op exact with 2 and 4 ranks, and allgather
// around the chunk size with uneven and empty blocks. (At the default
// 1 MiB threshold, EveryCollectiveDtypeAndOpIsExact's tens-of-MiB sizes
// take this path too, and KilledPeerFailsSurvivorsFast's 4 MiB calls.)
TEST(CollectivesSingleCopy, EveryCollectiveDtypeAndOpIsExactFromOneByte) {
  const std::map<std::string, std::string> env = {{"COHORT_SHM_SINGLE_COPY_BYTES", "1"},
                                                  {"COHORT_SHM_SLOT_BYTES", "4096"}};
  for (int np : {2, 4}) {
    Finished f = RunWorkers(np, "auto", {"all", "quick"}, 120, env);
    if (Contains(f.err, "single-copy shared memory is off") &&
        Contains(f.err, "(process_vm_readv: Operation not permitted)")) {
      // Yama's ptrace_scope >= 1 without CAP_SYS_PTRACE, or a seccomp
      // profile: the kernel here refuses, which the fallback test covers.
      GTEST_SKIP() << "this kernel refuses process_vm_readv between the ranks:\n" << f.err;
    }
    EXPECT_EQ(f.exit_code, 0) << np << " ranks\n" << f.out << f.err;
    EXPECT_EQ(CountLines(f.out, "single copy 1"), np) << f.out;
    EXPECT_EQ(CountLines(f.out, "collective checks exact"), np) << f.out;
  }
  Finished f = RunWorkers(3, "auto", {"allgather", "4096"}, 120, env);
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "single copy 1"), 3) << f.out;
  EXPECT_EQ(CountLines(f.out, "allgather checks exact"), 3) << f.out;
}

// Buffers from AllocateSharedMemory: the peers map each other's regions and
// copy and reduce with plain loads and stores; every collective, dtype and op
// stays exact with 2 and 4 ranks, and with 3 ranks where only the even ranks'
// buffers are shared (a call mixing mapped and process_vm_readv'd buffers).
TEST(CollectivesSingleCopy, SharedMemoryBuffersAreMappedAndExact) {
  const std::map<std::string, std::string> env = {{"COHORT_SHM_SINGLE_COPY_BYTES", "1"},
                                                  {"COHORT_SHM_SLOT_BYTES", "4096"}};
  for (int np : {2, 4}) {
    Finished f = RunWorkers(np, "auto", {"all", "quick", "shared"}, 120, env);
    if (Contains(f.err, "(process_vm_readv: Operation not permitted)")) {
      GTEST_SKIP() << "this kernel refuses process_vm_readv between the ranks:\n" << f.err;
    }
    EXPECT_EQ(f.exit_code, 0) << np << " ranks\n" << f.out << f.err;
    EXPECT_EQ(CountLines(f.out, "single copy 1"), np) << f.out;
    EXPECT_EQ(CountLines(f.out, "collective checks exact"), np) << f.out;
    EXPECT_EQ(CountLines(f.out, "peer regions mapped "), np) << f.out;
    EXPECT_EQ(CountLines(f.out, "peer regions mapped 0"), 0) << "a rank mapped no peer's\n"
                                                             << f.out;
  }
  Finished mixed = RunWorkers(3, "auto", {"all", "quick", "shared-even"}, 120, env);
  EXPECT_EQ(mixed.exit_code, 0) << mixed.out << mixed.err;
  EXPECT_EQ(CountLines(mixed.out, "collective checks exact"), 3) << mixed.out;
  EXPECT_EQ(CountLines(mixed.out, "peer regions mapped 0"), 0) << mixed.out;
}

// AllocateSharedMemory / FreeSharedMemory: refused before Init and for
// pointers of other origin or freed twice, each with its message; a buffer
// stays usable after Shutdown until freed.
TEST(CollectivesSingleCopy, SharedMemoryApi) {
  Finished f = RunWorkers(1, "auto", {"shared_api"}, 60);
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "shared memory API checks exact"), 1) << f.out << f.err;
}

// Switched off, or refused by the kernel (a rank its peers may not read):
// every rank reports two copies and stays exact; a refusal is logged once,
// naming a rank and the kernel's reason.
TEST(CollectivesSingleCopy, OffOrRefusedFallsBackToTwoCopies) {
  Finished off =
      RunWorkers(2, "auto", {"all", "quick"}, 120,
                 {{"COHORT_SHM_SINGLE_COPY", "off"}, {"COHORT_SHM_SINGLE_COPY_BYTES", "1"}});
  EXPECT_EQ(off.exit_code, 0) << off.out << off.err;
  EXPECT_EQ(CountLines(off.out, "single copy 0"), 2) << off.out;
  EXPECT_EQ(CountLines(off.out, "collective checks exact"), 2) << off.out;
  EXPECT_FALSE(Contains(off.err, "single-copy shared memory is off")) << off.err;

  Finished refused =
      RunWorkers(3, "auto", {"refused", "quick"}, 120, {{"COHORT_SHM_SINGLE_COPY_BYTES", "1"}});
  EXPECT_EQ(refused.exit_code, 0) << refused.out << refused.err;
  EXPECT_EQ(CountLines(refused.out, "single copy 0"), 3) << refused.out;
  EXPECT_EQ(CountLines(refused.out, "collective checks exact"), 3) << refused.out;
  EXPECT_EQ(CountLines(refused.err, "single-copy shared memory is off: rank "), 1) << refused.err;
  EXPECT_TRUE(Contains(refused.err,
                       "may not read its peers' memory (process_vm_readv: "
                       "Operation not permitted)"))
      << refused.err;
}

std::vector<std::unique_ptr<ChildProcess>> StartTorchrunStyle(
    int np, const std::string& transport, const std::vector<std::string>& args,
    std::map<std::string, std::string> env = {}) {
  std::vector<std::string> argv = {TestBinary("collectives_worker")};
  argv.insert(argv.end(), args.begin(), args.end());
  env["COHORT_TRANSPORT"] = transport;
  return StartWithTorchrunVariables(np, argv, env);
}

// A rank killed mid-allreduce or mid-allgather: every survivor fails with an
// error naming it and the collective, long before COHORT_TIMEOUT (60 s).
TEST(CollectivesFailure, KilledPeerFailsSurvivorsFast) {
  for (const std::string collective : {"allreduce", "allgather"}) {
    for (const std::string transport : {"auto", "tcp"}) {
      auto workers = StartTorchrunStyle(3, transport, {"die", collective});
      for (int r = 0; r < 2; ++r) {
        Finished f = workers[r]->Finish(Deadline::AfterSeconds(30));
        EXPECT_EQ(f.exit_code, 0) << collective << " " << transport << " rank " << r << ": "
                                  << f.out << f.err;
        EXPECT_TRUE(Contains(f.out, "peer failure")) << f.out;
        EXPECT_TRUE(Contains(f.out, "rank 2 (host ")) << f.out;
        EXPECT_TRUE(Contains(f.out, collective)) << f.out;
        EXPECT_LT(f.seconds, 20) << "survivor noticed the dead peer too late";
      }
      Finished dead = workers[2]->Finish(Deadline::AfterSeconds(30));
      EXPECT_EQ(dead.exit_code, 128 + SIGKILL);
    }
  }
}

// The same with shared-memory buffers, which the survivors have mapped: the
// dead rank's memory stays readable, and its death is still seen and named.
TEST(CollectivesFailure, KilledPeerWithSharedBuffersFailsSurvivorsFast) {
  for (const std::string collective : {"allreduce", "allgather"}) {
    auto workers = StartTorchrunStyle(3, "auto", {"die", collective, "shared"});
    for (int r = 0; r < 2; ++r) {
      Finished f = workers[r]->Finish(Deadline::AfterSeconds(30));
      EXPECT_EQ(f.exit_code, 0) << collective << " rank " << r << ": " << f.out << f.err;
      EXPECT_TRUE(Contains(f.out, "peer failure")) << f.out;
      EXPECT_TRUE(Contains(f.out, "rank 2 (host ")) << f.out;
      EXPECT_LT(f.seconds, 20) << "survivor noticed the dead peer too late";
    }
    Finished dead = workers[2]->Finish(Deadline::AfterSeconds(30));
    EXPECT_EQ(dead.exit_code, 128 + SIGKILL);
  }
}

// Hierarchical allreduce: 4 ranks as 2 emulated hosts x 2 (shared memory
// within, TCP between), every dtype x op exact up to several MiB + odd; once
// with one TCP connection per pair and once striped over 4.
TEST(CollectivesHierarchical, TwoEmulatedHostsEveryDtypeAndOpIsExact) {
  for (const char* streams : {"1", "4"}) {
    Finished f = RunWorkers(4, "auto", {"allreduce"}, 200,
                            {{"COHORT_TEST_HOSTS", "0,0,1,1"},
                             {"COHORT_ALLREDUCE_ALGORITHM", "hierarchical"},
                             {"COHORT_TCP_STREAMS", streams}});
    EXPECT_EQ(f.exit_code, 0) << streams << " streams\n" << f.out << f.err;
    EXPECT_EQ(CountLines(f.out, "local_size 2 cross_size 2"), 4) << f.out;
    EXPECT_EQ(CountLines(f.out, "allreduce checks exact"), 4) << f.out;
  }
}

// float16/bfloat16 compression under the hierarchical algorithm is applied
// once per host: host sums in float32, 16 bits only between hosts (the
// worker checks every element against that and counts where rounding each
// rank's input first would differ).
TEST(CollectivesHierarchical, CompressionIsAppliedOncePerHost) {
  Finished f = RunWorkers(
      4, "auto", {"compressed_hosts"}, 60,
      {{"COHORT_TEST_HOSTS", "0,0,1,1"}, {"COHORT_ALLREDUCE_ALGORITHM", "hierarchical"}});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "2 compressed once per host checks exact"), 4) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, " 0 elements where per-rank rounding differs"), 0) << f.out;
}

// Hosts that interleave ranks (host of rank r is r % 3), chosen by `auto`,
// with tiny chunks so every ring phase runs many pipeline steps.
TEST(CollectivesHierarchical, ThreeInterleavedHostsTinyChunks) {
  Finished f = RunWorkers(6, "auto", {"allreduce", "quick"}, 200,
                          {{"COHORT_TEST_HOSTS", "0,1,2,0,1,2"},
                           {"COHORT_CHUNK_BYTES", "64"},
                           {"COHORT_SMALL_MESSAGE_BYTES", "16"}});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "local_size 2 cross_size 3"), 6) << f.out;
  EXPECT_EQ(CountLines(f.out, "allreduce checks exact"), 6) << f.out;
}

// Hosts of different sizes: forcing hierarchical fails on every rank with
// the reason; `auto` falls back to the ring and stays exact.
TEST(CollectivesHierarchical, UnevenHosts) {
  Finished forced =
      RunWorkers(3, "auto", {"allreduce_fails"}, 60,
                 {{"COHORT_TEST_HOSTS", "0,0,1"}, {"COHORT_ALLREDUCE_ALGORITHM", "hierarchical"}});
  EXPECT_EQ(forced.exit_code, 0) << forced.out << forced.err;
  EXPECT_EQ(CountLines(forced.out, "needs the same number of ranks on every host"), 3)
      << forced.out;
  Finished automatic =
      RunWorkers(3, "auto", {"allreduce", "quick"}, 120, {{"COHORT_TEST_HOSTS", "0,0,1"}});
  EXPECT_EQ(automatic.exit_code, 0) << automatic.out << automatic.err;
  EXPECT_EQ(CountLines(automatic.out, "allreduce checks exact"), 3) << automatic.out;
}

// Two ranks over TCP with 4 streams: the flat algorithms over striped links.
TEST(CollectivesTcpStreams, FourStreamsEveryDtypeAndOpIsExact) {
  Finished f = RunWorkers(2, "tcp", {"allreduce"}, 200, {{"COHORT_TCP_STREAMS", "4"}});
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_EQ(CountLines(f.out, "allreduce checks exact"), 2) << f.out;
}

TEST(CollectivesTcpStreams, BadValueIsNamed) {
  Finished f = RunWorkers(2, "tcp", {"allreduce", "quick"}, 60, {{"COHORT_TCP_STREAMS", "0"}});
  EXPECT_NE(f.exit_code, 0);
  EXPECT_TRUE(Contains(f.err, "COHORT_TCP_STREAMS must be between 1 and 16, not 0")) << f.err;
}

// A rank killed mid-allreduce on emulated hosts with striped TCP: every
// survivor, on its host or the other, fails naming it, well before the timeout.
TEST(CollectivesHierarchical, KilledPeerFailsSurvivorsFast) {
  auto workers = StartTorchrunStyle(4, "auto", {"die"},
                                    {{"COHORT_TEST_HOSTS", "0,0,1,1"},
                                     {"COHORT_ALLREDUCE_ALGORITHM", "hierarchical"},
                                     {"COHORT_TCP_STREAMS", "2"}});
  for (int r = 0; r < 3; ++r) {
    Finished f = workers[r]->Finish(Deadline::AfterSeconds(30));
    EXPECT_EQ(f.exit_code, 0) << "rank " << r << ": " << f.out << f.err;
    EXPECT_TRUE(Contains(f.out, "peer failure")) << f.out;
    EXPECT_TRUE(Contains(f.out, "rank 3 (host ")) << f.out;
    EXPECT_LT(f.seconds, 20) << "survivor noticed the dead peer too late";
  }
  Finished dead = workers[3]->Finish(Deadline::AfterSeconds(30));
  EXPECT_EQ(dead.exit_code, 128 + SIGKILL);
}

// Under torchrun's variables the job bootstraps with rank 0 hosting the store.
TEST(CollectivesBootstrap, TorchrunEnvironment) {
  auto workers = StartTorchrunStyle(2, "auto", {"all", "quick"});
  for (auto& w : workers) {
    Finished f = w->Finish(Deadline::AfterSeconds(120));
    EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  }
}

}  // namespace
}  // namespace cohort::testing
