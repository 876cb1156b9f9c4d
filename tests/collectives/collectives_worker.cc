// Worker program for the multi-process collective tests: run under
// `cohort run -np N` (or with launcher variables set by the test). Each mode
// exercises the public API and exits 0 only when every result is exact.
//
//   collectives_worker all [quick]  every collective x dtype x op at sizes 0, 1,
//                                   odd and tens of MiB, checked against a
//                                   single-process reference
//   collectives_worker mismatch     rank 1 passes a different count; every
//                                   rank must get a kMismatch error naming ranks
//   collectives_worker mismatch allgather
//                                   the same with rank 1 passing other
//                                   per-rank counts to allgather
//   collectives_worker die [allgather]
//                                   the last rank kills itself mid-allreduce
//                                   (or mid-allgather); the others must fail
//                                   with kPeerFailure
//   collectives_worker allgather SLOT_BYTES
//                                   allgather only: every dtype, even and
//                                   uneven counts (zero-count ranks too) below,
//                                   at and above one chunk of SLOT_BYTES
//                                   (COHORT_SHM_SLOT_BYTES), in and out of place
//   collectives_worker badarg       rank 0 passes an invalid root; all ranks fail
//   collectives_worker capi         the plain-C ABI: results, queries, and an
//                                   invalid dtype on one rank failing all ranks
//   collectives_worker allreduce [quick]
//                                   allreduce only: every dtype x op (with and
//                                   without scaling) at sizes 0, 1, odd and
//                                   several MiB + odd; prints the topology
//   collectives_worker allreduce_fails
//                                   one allreduce that must fail on every rank
//                                   (the test sets what makes it fail)
//   collectives_worker refused [quick]
//                                   as `all`, after every rank dropped
//                                   CAP_SYS_PTRACE and the last made itself
//                                   undumpable, so the kernel refuses the
//                                   others' process_vm_readv of it: the
//                                   single-copy probe must say no and the
//                                   two-copy path keep the results exact
//
// The checking modes print "single copy 0|1" (which path the job's large
// one-host collectives take, SharedMemorySingleCopy).
//
// A last argument `shared` makes every buffer of `all` and `die` come from
// cohort::AllocateSharedMemory (`shared-even`: on even ranks only, so a call
// mixes mappable and private buffers); the checking modes then also print
// how many of the peers' shared regions this rank has mapped.
//
//   collectives_worker shared_api   AllocateSharedMemory / FreeSharedMemory:
//                                   refusals with their messages, a buffer
//                                   that outlives Shutdown
#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cohort/c_api.h"
#include "cohort/cohort.h"
#include "common/half.h"
#include "common/value_convert.h"

namespace cohort {
namespace {

int g_failures = 0;

// Where the worker's collective buffers come from (the `shared` argument).
enum class Buffers { kPlain, kShared, kSharedEvenRanks };
Buffers g_buffers = Buffers::kPlain;

#define CHECK_OK(expr)                                                                        \
  do {                                                                                        \
    Status s_ = (expr);                                                                       \
    if (!s_.ok()) {                                                                           \
      std::fprintf(stderr, "rank %d: %s failed: %s\n", Rank(), #expr, s_.ToString().c_str()); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

bool UseShared() {
  return g_buffers == Buffers::kShared ||
         (g_buffers == Buffers::kSharedEvenRanks && Rank() % 2 == 0);
}

// Gives std::vector the worker's kind of memory (only while initialized).
template <typename T>
struct TestAllocator {
  using value_type = T;
  TestAllocator() = default;
  template <typename U>
  TestAllocator(const TestAllocator<U>&) {}
  T* allocate(size_t n) {
    if (!UseShared()) return static_cast<T*>(::operator new(n * sizeof(T)));
    void* p = nullptr;
    CHECK_OK(AllocateSharedMemory(n * sizeof(T), &p));
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) {
    if (!UseShared()) return ::operator delete(p);
    CHECK_OK(FreeSharedMemory(p));
  }
  bool operator==(const TestAllocator&) const { return true; }
  bool operator!=(const TestAllocator&) const { return false; }
};
using Bytes = std::vector<unsigned char, TestAllocator<unsigned char>>;

// The peers' shared regions mapped into this process (its own are freed
// by the time this is asked).
int MappedPeerRegions() {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return -1;
  char line[512];
  int n = 0;
  while (std::fgets(line, sizeof(line), maps) != nullptr) {
    n += std::strstr(line, "/memfd:cohort-shared-") != nullptr ? 1 : 0;
  }
  std::fclose(maps);
  return n;
}

bool IsFloat(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBFloat16 || t == DataType::kFloat32 ||
         t == DataType::kFloat64;
}

// Input(t, op, rank, i) is periodic in i with this period (lcm of 11 and 4).
constexpr size_t kInputPeriod = 44;

// Small integers, so every reduction is exact in every type; negative values
// only for signed types.
double Input(DataType t, ReduceOp op, int rank, size_t i) {
  const bool is_unsigned = t == DataType::kUInt8;
  if (op == ReduceOp::kProduct) {
    const int v = static_cast<int>((rank * 5 + i * 3) % 4);  // 0..3 -> 1, 2, 1, -1
    if (v == 3) return is_unsigned ? 1 : -1;
    return v == 1 ? 2 : 1;
  }
  const double v = static_cast<double>((rank * 31 + i * 7) % 11);
  return is_unsigned ? v : v - 5;
}

// Applies a scale factor the way the library specifies: integers truncate
// toward zero, floats round to the type.
double ScaleValue(DataType t, double v, double factor) {
  if (factor == 1.0) return v;
  unsigned char tmp[8];
  if (IsFloat(t)) {
    StoreAs(t, v * factor, tmp);
  } else {
    StoreAs(t, std::trunc(v * factor), tmp);
  }
  return LoadAs(t, tmp);
}

double Rounded(DataType t, double v) {
  unsigned char tmp[8];
  StoreAs(t, v, tmp);
  return LoadAs(t, tmp);
}

// Reference allreduce of element i over all ranks, in double arithmetic with
// the library's documented semantics.
double ReduceReference(DataType t, ReduceOp op, int n, size_t i, double pre, double post) {
  double acc = 0;
  for (int r = 0; r < n; ++r) {
    const double v = ScaleValue(t, Input(t, op, r, i), pre);
    if (r == 0) {
      acc = v;
    } else if (op == ReduceOp::kSum || op == ReduceOp::kAverage) {
      acc += v;
    } else if (op == ReduceOp::kMin) {
      acc = std::min(acc, v);
    } else if (op == ReduceOp::kMax) {
      acc = std::max(acc, v);
    } else {
      acc *= v;
    }
  }
  acc = Rounded(t, acc);
  if (op == ReduceOp::kAverage) {
    acc = IsFloat(t) ? Rounded(t, acc / n) : std::trunc(acc / n);
  }
  return ScaleValue(t, acc, post);
}

void Fill(Bytes& buf, DataType t, ReduceOp op, size_t count, size_t offset, int rank) {
  const size_t es = DataTypeSize(t);
  buf.resize(std::max<size_t>(count, 1) * es);
  for (size_t i = 0; i < count; ++i) StoreAs(t, Input(t, op, rank, offset + i), &buf[i * es]);
}

void Expect(const std::string& what, DataType t, const unsigned char* got, size_t i, double want) {
  const double have = LoadAs(t, got + i * DataTypeSize(t));
  if (have != want && !(std::isnan(have) && std::isnan(want))) {
    if (g_failures++ < 5) {
      std::fprintf(stderr, "rank %d: %s %s: element %zu is %g, expected %g\n", Rank(), what.c_str(),
                   DataTypeName(t), i, have, want);
    }
  }
}

std::vector<size_t> Sizes(DataType t, bool quick) {
  std::vector<size_t> sizes = {0, 1, 7, 1001};
  if (!quick) sizes.push_back((10u << 20) / DataTypeSize(t) + 3);  // tens of MiB, odd
  return sizes;
}

void CheckAllreduce(DataType t, ReduceOp op, size_t count, double pre, double post, bool inplace) {
  const int n = Size(), r = Rank();
  Bytes send, recv(std::max<size_t>(count, 1) * DataTypeSize(t));
  Fill(send, t, op, count, 0, r);
  unsigned char* out = inplace ? send.data() : recv.data();
  CHECK_OK(Allreduce(send.data(), out, count, t, AllreduceOptions{op, pre, post}));
  const std::string what =
      std::string("allreduce ") + ReduceOpName(op) + " count " + std::to_string(count);
  // Input() repeats in i, so the reference does too: compute one period and
  // check every element against it (the reference per element dominated the
  // run time at several MiB).
  std::vector<double> want(std::min(count, kInputPeriod));
  for (size_t i = 0; i < want.size(); ++i) want[i] = ReduceReference(t, op, n, i, pre, post);
  for (size_t i = 0; i < count; ++i) Expect(what, t, out, i, want[i % kInputPeriod]);
}

void CheckReduceScatter(DataType t, ReduceOp op, size_t count) {
  const int n = Size(), r = Rank();
  // Uneven blocks: rank b gets count + b elements.
  std::vector<size_t> counts(n);
  size_t total = 0, offset = 0;
  for (int b = 0; b < n; ++b) {
    counts[b] = count + b;
    if (b < r) offset += counts[b];
    total += counts[b];
  }
  Bytes send, recv(std::max<size_t>(counts[r], 1) * DataTypeSize(t));
  Fill(send, t, op, total, 0, r);
  CHECK_OK(ReduceScatter(send.data(), recv.data(), counts.data(), t, op));
  for (size_t i = 0; i < counts[r]; ++i) {
    Expect("reducescatter", t, recv.data(), i, ReduceReference(t, op, n, offset + i, 1, 1));
  }
}

void CheckAllgather(DataType t, size_t count) {
  const int n = Size(), r = Rank();
  const size_t mine = r % 2 == 0 ? count : count / 2 + r;  // ranks contribute different sizes
  Result<std::vector<size_t>> counts = AllgatherCounts(mine);
  CHECK_OK(counts.status());
  size_t total = 0;
  for (int p = 0; p < n; ++p) {
    const size_t want = p % 2 == 0 ? count : count / 2 + p;
    if ((*counts)[p] != want) {
      std::fprintf(stderr, "rank %d: AllgatherCounts[%d] = %zu, expected %zu\n", r, p, (*counts)[p],
                   want);
      ++g_failures;
    }
    total += (*counts)[p];
  }
  Bytes send, recv(std::max<size_t>(total, 1) * DataTypeSize(t));
  Fill(send, t, ReduceOp::kSum, mine, 1000 * r, r);
  CHECK_OK(Allgather(send.data(), mine, recv.data(), counts->data(), t));
  size_t at = 0;
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < (*counts)[p]; ++i) {
      Expect("allgather", t, recv.data(), at + i, Input(t, ReduceOp::kSum, p, 1000 * p + i));
    }
    at += (*counts)[p];
  }
}

// Allgather element i of rank p's block: not periodic in i (a chunk copied
// to the wrong place shows), small enough for every dtype.
double GatherValue(DataType t, int p, size_t i) { return Input(t, ReduceOp::kSum, p, i + i / 97); }

// One allgather with `counts` per rank, checked exactly; elements past the
// end of the output must stay untouched.
void CheckAllgatherCounts(DataType t, const std::vector<size_t>& counts, bool inplace) {
  const int n = Size(), r = Rank();
  const size_t es = DataTypeSize(t);
  constexpr size_t kGuard = 64;
  constexpr unsigned char kGuardByte = 0xA5;
  std::vector<size_t> offsets(n + 1, 0);
  for (int p = 0; p < n; ++p) offsets[p + 1] = offsets[p] + counts[p];
  const size_t total = offsets[n];
  Bytes recv((total + kGuard) * es, kGuardByte), send;
  unsigned char* in = recv.data() + offsets[r] * es;
  if (!inplace) {
    send.resize(std::max<size_t>(counts[r], 1) * es);
    in = send.data();
  }
  for (size_t i = 0; i < counts[r]; ++i) StoreAs(t, GatherValue(t, r, i), in + i * es);
  CHECK_OK(Allgather(in, counts[r], recv.data(), counts.data(), t));
  const std::string what = std::string("allgather ") + (inplace ? "in place" : "out of place") +
                           " of " + std::to_string(total);
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < counts[p]; ++i) {
      Expect(what + " block " + std::to_string(p), t, recv.data(), offsets[p] + i,
             GatherValue(t, p, i));
    }
  }
  for (size_t b = total * es; b < recv.size(); ++b) {
    if (recv[b] != kGuardByte && g_failures++ < 5) {
      std::fprintf(stderr, "rank %d: %s: byte %zu past the output was written\n", r, what.c_str(),
                   b);
    }
  }
}

void CheckBroadcast(DataType t, size_t count) {
  const int n = Size(), r = Rank();
  for (int root : {0, n - 1}) {
    Bytes buf;
    Fill(buf, t, ReduceOp::kSum, count, 0, r);
    CHECK_OK(Broadcast(buf.data(), count, t, root));
    for (size_t i = 0; i < count; ++i) {
      Expect("broadcast from " + std::to_string(root), t, buf.data(), i,
             Input(t, ReduceOp::kSum, root, i));
    }
  }
}

// Rank r sends count + p + r elements to rank p, values identifying (r, p, i).
void CheckAlltoall(DataType t, size_t count) {
  const int n = Size(), r = Rank();
  std::vector<size_t> send_counts(n);
  for (int p = 0; p < n; ++p) send_counts[p] = count == 0 ? 0 : count + p + r;
  Result<std::vector<size_t>> recv_counts = AlltoallCounts(send_counts.data());
  CHECK_OK(recv_counts.status());
  size_t send_total = 0, recv_total = 0;
  for (int p = 0; p < n; ++p) {
    send_total += send_counts[p];
    recv_total += (*recv_counts)[p];
  }
  Bytes send(std::max<size_t>(send_total, 1) * DataTypeSize(t));
  Bytes recv(std::max<size_t>(recv_total, 1) * DataTypeSize(t));
  size_t at = 0;
  for (int p = 0; p < n; ++p) {
    for (size_t i = 0; i < send_counts[p]; ++i) {
      StoreAs(t, Input(t, ReduceOp::kSum, r, p * 100 + i), &send[(at + i) * DataTypeSize(t)]);
    }
    at += send_counts[p];
  }
  CHECK_OK(Alltoall(send.data(), send_counts.data(), recv.data(), recv_counts->data(), t));
  at = 0;
  for (int p = 0; p < n; ++p) {
    const size_t want_count = count == 0 ? 0 : count + r + p;
    if ((*recv_counts)[p] != want_count) ++g_failures;
    for (size_t i = 0; i < (*recv_counts)[p]; ++i) {
      Expect("alltoall", t, recv.data(), at + i, Input(t, ReduceOp::kSum, p, r * 100 + i));
    }
    at += (*recv_counts)[p];
  }
}

constexpr DataType kTypes[] = {DataType::kUInt8,   DataType::kInt8,    DataType::kInt32,
                               DataType::kInt64,   DataType::kFloat16, DataType::kBFloat16,
                               DataType::kFloat32, DataType::kFloat64, DataType::kInt16};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                             ReduceOp::kProduct};

// Allreduce with every op, then with pre/post scaling; returns the checks made.
int CheckAllreduceVariants(DataType t, size_t count) {
  for (ReduceOp op : kOps) CheckAllreduce(t, op, count, 1, 1, /*inplace=*/op == ReduceOp::kSum);
  CheckAllreduce(t, ReduceOp::kSum, count, 0.5, 2, false);
  CheckAllreduce(t, ReduceOp::kAverage, count, 2, 0.5, true);
  return 7;
}

// Exit status of a checking mode: 0 and "N <what> checks exact" when no
// element was wrong.
int Report(int checks, const char* what) {
  if (g_failures > 0) {
    std::fprintf(stderr, "rank %d: %d wrong elements\n", Rank(), g_failures);
    return 1;
  }
  std::printf("rank %d: %d %s checks exact\n", Rank(), checks, what);
  return 0;
}

void PrintPath() { std::printf("rank %d: single copy %d\n", Rank(), SharedMemorySingleCopy()); }

int RunAll(bool quick) {
  PrintPath();
  int checks = 0;
  for (DataType t : kTypes) {
    for (size_t count : Sizes(t, quick)) {
      checks += CheckAllreduceVariants(t, count);
      for (ReduceOp op : kOps) CheckReduceScatter(t, op, count / Size());
      CheckAllgather(t, count / Size());
      CheckBroadcast(t, count);
      CheckAlltoall(t, count / Size());
      CHECK_OK(Barrier());
      checks += 5 + 4;
    }
  }
  if (g_buffers != Buffers::kPlain) {
    std::printf("rank %d: peer regions mapped %d\n", Rank(), MappedPeerRegions());
  }
  return Report(checks, "collective");
}

// Allreduce alone, for algorithms chosen by the environment (hierarchical on
// emulated hosts, striped TCP links): topology line, then exactness at sizes
// 0, 1, odd and several MiB + odd.
int RunAllreduceOnly(bool quick) {
  PrintPath();
  std::printf("rank %d: local_size %d cross_size %d\n", Rank(), LocalSize(), CrossSize());
  int checks = 0;
  for (DataType t : kTypes) {
    std::vector<size_t> sizes = {0, 1, 7, 1001};
    if (!quick) sizes.push_back((3u << 20) / DataTypeSize(t) + 3);
    for (size_t count : sizes) checks += CheckAllreduceVariants(t, count);
  }
  return Report(checks, "allreduce");
}

// Float32 with float16/bfloat16 compression, 4 ranks on 2 hosts "0,0,1,1"
// under the hierarchical algorithm: compressed once per host, so each
// result is the host sums (float32) rounded once to 16 bits and summed across
// hosts in 16 bits; a per-rank rounding (every input rounded first) would
// give other results for some elements, which is counted to show it.
int RunCompressedHosts() {
  const int me = Rank();
  const size_t count = 4096 + 3;
  auto input = [](int rank, size_t k) {
    return 1.0f + std::ldexp(static_cast<float>(k % 4096), -13) * static_cast<float>(rank + 1);
  };
  int differ_per_rank = 0;
  for (Compression c : {Compression::kFloat16, Compression::kBFloat16}) {
    auto round = [c](float v) {
      return c == Compression::kFloat16 ? Float16ToFloat(FloatToFloat16(v))
                                        : BFloat16ToFloat(FloatToBFloat16(v));
    };
    std::vector<float> buf(count);
    for (size_t k = 0; k < count; ++k) buf[k] = input(me, k);
    Status s = Allreduce(buf.data(), buf.data(), count, DataType::kFloat32,
                         AllreduceOptions{ReduceOp::kSum, 1, 1, c});
    if (!s.ok()) {
      std::fprintf(stderr, "rank %d: %s\n", me, s.ToString().c_str());
      return 1;
    }
    for (size_t k = 0; k < count; ++k) {
      const float once = round(round(input(0, k) + input(1, k)) + round(input(2, k) + input(3, k)));
      const float per_rank = round(round(round(input(0, k)) + round(input(1, k))) +
                                   round(round(input(2, k)) + round(input(3, k))));
      differ_per_rank += once != per_rank ? 1 : 0;
      if (buf[k] != once && g_failures++ < 5) {
        std::fprintf(stderr, "rank %d: element %zu is %.9g, expected %.9g (per rank: %.9g)\n", me,
                     k, buf[k], once, per_rank);
      }
    }
  }
  std::printf("rank %d: %d elements where per-rank rounding differs\n", me, differ_per_rank);
  return Report(2, "compressed once per host");
}

// Allgather alone around the chunk size E = slot_bytes / element size:
// blocks of 1, E-1, E, E+1 and several chunks plus an odd rest (more chunks
// than slots, so slots are reused), even and uneven, with the last rank
// contributing nothing, and all ranks nothing.
int RunAllgatherOnly(size_t slot_bytes) {
  PrintPath();
  const int n = Size();
  int checks = 0;
  for (DataType t : kTypes) {
    const size_t e = slot_bytes / DataTypeSize(t);
    CheckAllgatherCounts(t, std::vector<size_t>(n, 0), false);
    ++checks;
    for (size_t base : {size_t{1}, e - 1, e, e + 1, 5 * e + 7}) {
      std::vector<size_t> even(n, base), uneven(n);
      for (int p = 0; p < n; ++p) uneven[p] = p == n - 1 ? 0 : base + p * (base / 3) + p;
      for (bool inplace : {false, true}) {
        CheckAllgatherCounts(t, even, inplace);
        CheckAllgatherCounts(t, uneven, inplace);
        checks += 2;
      }
    }
  }
  return Report(checks, "allgather");
}

int RunAllreduceFails() {
  std::vector<float> buf(1000, 1.0f);
  Status s = Allreduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32);
  std::printf("rank %d: %s\n", Rank(), s.ToString().c_str());
  return s.ok() ? 1 : 0;
}

// Every rank must fail with kMismatch and a message naming two ranks.
// Allgather: rank 1 believes rank 0 sends one element more.
int RunMismatch(bool allgather) {
  std::vector<float> buf(100 + Rank(), 1.0f);
  std::vector<float> all(101 * Size());
  std::vector<size_t> counts(Size(), 100);
  if (Rank() == 1) counts[0] = 101;
  Status s = allgather
                 ? Allgather(buf.data(), 100, all.data(), counts.data(), DataType::kFloat32)
                 : Allreduce(buf.data(), buf.data(), Rank() == 1 ? 101 : 100, DataType::kFloat32);
  std::printf("rank %d: %s\n", Rank(), s.ToString().c_str());
  if (s.code() != Status::Code::kMismatch || s.message().find("rank") == std::string::npos) {
    return 1;
  }
  Status after = Barrier();  // the communicator stays failed
  return after.code() == Status::Code::kMismatch ? 0 : 1;
}

int RunDie(bool allgather) {
  const size_t count = 1 << 20;
  Bytes buf(count * sizeof(float)), all(count * sizeof(float) * Size());
  const std::vector<size_t> counts(Size(), count);
  for (int iter = 0;; ++iter) {
    if (Rank() == Size() - 1 && iter == 3) raise(SIGKILL);
    Status s = allgather
                   ? Allgather(buf.data(), count, all.data(), counts.data(), DataType::kFloat32)
                   : Allreduce(buf.data(), buf.data(), count, DataType::kFloat32);
    if (!s.ok()) {
      std::printf("rank %d: %s\n", Rank(), s.ToString().c_str());
      return s.code() == Status::Code::kPeerFailure ? 0 : 1;
    }
  }
}

int RunBadArg() {
  std::vector<int32_t> buf(10, 0);
  Status s = Broadcast(buf.data(), buf.size(), DataType::kInt32, Rank() == 0 ? Size() + 5 : 0);
  std::printf("rank %d: %s\n", Rank(), s.ToString().c_str());
  return s.ok() ? 1 : 0;
}

int RunCApi() {
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    if (!ok) {
      std::fprintf(stderr, "rank %d: C API check failed: %s\n", Rank(), what);
      ++failures;
    }
  };
  expect(cohort_is_initialized() == 1, "initialized");
  expect(cohort_rank() == Rank() && cohort_size() == Size(), "rank and size");
  expect(cohort_local_size() == Size() && cohort_cross_size() == 1, "one host");
  cohort_error err{};
  std::vector<int64_t> v(5, Rank() + 1);
  expect(cohort_allreduce(v.data(), v.data(), v.size(), COHORT_INT64, COHORT_SUM, 1, 1, &err) ==
             COHORT_OK,
         err.message);
  expect(v[4] == static_cast<int64_t>(Size()) * (Size() + 1) / 2, "allreduce sum");
  std::vector<uint64_t> counts(Size());
  expect(cohort_allgather_counts(Rank() + 2, counts.data(), &err) == COHORT_OK, err.message);
  expect(counts[Size() - 1] == static_cast<uint64_t>(Size() + 1), "allgather counts");
  // Rank 0 passes a dtype that does not exist: every rank must fail.
  const int dtype = Rank() == 0 ? 99 : COHORT_FLOAT32;
  std::vector<float> f(3, 1.0f);
  const int code = cohort_allreduce(f.data(), f.data(), f.size(), dtype, COHORT_SUM, 1, 1, &err);
  std::printf("rank %d: code %d: %s\n", Rank(), code, err.message);
  expect(code != COHORT_OK && err.code == code, "bad dtype fails");
  expect(std::strstr(err.message, "invalid data type value 99") != nullptr,
         "message names the dtype");
  return failures == 0 ? 0 : 1;
}

// AllocateSharedMemory and FreeSharedMemory around Init and Shutdown (called
// before Init; returns with the runtime shut down).
int RunSharedApi() {
  int failures = 0;
  auto expect = [&](const Status& s, Status::Code code, const std::string& text) {
    if (s.code() != code || s.message().find(text) == std::string::npos) {
      std::fprintf(stderr, "rank %d: got '%s', expected '%s'\n", Rank(), s.ToString().c_str(),
                   text.c_str());
      ++failures;
    }
  };
  void* p = nullptr;
  expect(AllocateSharedMemory(64, &p), Status::Code::kNotInitialized, "call cohort::Init() first");
  CHECK_OK(Init());
  expect(AllocateSharedMemory(64, nullptr), Status::Code::kInvalidArgument, "out is null");
  CHECK_OK(AllocateSharedMemory(10000, &p));
  if (reinterpret_cast<uintptr_t>(p) % 4096 != 0) ++failures;
  auto* bytes = static_cast<unsigned char*>(p);
  for (int i = 0; i < 10000; ++i) failures += bytes[i] != 0 ? 1 : 0;  // zero-filled
  std::vector<unsigned char> plain(8192);
  unsigned char* aligned = plain.data() + (4096 - reinterpret_cast<uintptr_t>(plain.data()) % 4096);
  const std::string not_ours = "is not a pointer returned by AllocateSharedMemory";
  expect(FreeSharedMemory(aligned), Status::Code::kInvalidArgument, not_ours);
  expect(FreeSharedMemory(bytes + 1), Status::Code::kInvalidArgument, not_ours);
  expect(FreeSharedMemory(nullptr), Status::Code::kInvalidArgument, not_ours);
  void* q = nullptr;
  CHECK_OK(AllocateSharedMemory(1, &q));
  CHECK_OK(FreeSharedMemory(q));
  expect(FreeSharedMemory(q), Status::Code::kInvalidArgument, not_ours);  // a second free
  CHECK_OK(Shutdown());
  std::memset(bytes, 7, 10000);  // the caller's until freed, runtime or not
  CHECK_OK(FreeSharedMemory(p));
  expect(AllocateSharedMemory(64, &p), Status::Code::kNotInitialized, "call cohort::Init() first");
  if (failures == 0) std::printf("rank %d: shared memory API checks exact\n", Rank());
  return failures == 0 ? 0 : 1;
}

// Before Init: makes this process's memory closed to its peers'
// process_vm_readv the way a hardened kernel or container does (without
// CAP_SYS_PTRACE the kernel refuses access to an undumpable process, even
// of the same user), so the mesh's probe must find single copy refused.
void RefuseCrossMemoryAttach() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, caps) != 0) std::perror("capget");
  caps[CAP_TO_INDEX(CAP_SYS_PTRACE)].effective &= ~CAP_TO_MASK(CAP_SYS_PTRACE);
  if (syscall(SYS_capset, &header, caps) != 0) std::perror("capset");
  const char* rank = std::getenv("COHORT_RANK");
  const char* size = std::getenv("COHORT_SIZE");
  if (rank != nullptr && size != nullptr && std::atoi(rank) == std::atoi(size) - 1) {
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) std::perror("prctl");
  }
}

}  // namespace
}  // namespace cohort

int main(int argc, char** argv) {
  using namespace cohort;
  const std::string mode = argc > 1 ? argv[1] : "all";
  if (mode == "refused") RefuseCrossMemoryAttach();
  if (mode == "shared_api") return RunSharedApi();
  const std::string last = argv[argc - 1];
  if (last == "shared") g_buffers = Buffers::kShared;
  if (last == "shared-even") g_buffers = Buffers::kSharedEvenRanks;
  Status init = Init();
  if (!init.ok()) {
    std::fprintf(stderr, "init failed: %s\n", init.ToString().c_str());
    return 1;
  }
  int rc = 2;
  if (mode == "all" || mode == "refused")
    rc = RunAll(argc > 2 && std::strcmp(argv[2], "quick") == 0);
  const bool allgather = argc > 2 && std::strcmp(argv[2], "allgather") == 0;
  if (mode == "mismatch") rc = RunMismatch(allgather);
  if (mode == "die") rc = RunDie(allgather);
  if (mode == "allgather" && argc > 2) rc = RunAllgatherOnly(std::strtoull(argv[2], nullptr, 10));
  if (mode == "badarg") rc = RunBadArg();
  if (mode == "capi") rc = RunCApi();
  if (mode == "allreduce") rc = RunAllreduceOnly(argc > 2 && std::strcmp(argv[2], "quick") == 0);
  if (mode == "allreduce_fails") rc = RunAllreduceFails();
  if (mode == "compressed_hosts") rc = RunCompressedHosts();
  Shutdown();
  return rc;
}
