// `cohort bench COLLECTIVE`: timing and correctness sweep over message sizes,
// printed in the nccl-tests layout. Run it under `cohort run -np N`.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/bench_buffer.h"
#include "cli/commands.h"
#include "cli/flag_values.h"
#include "cli/usage_error.h"
#include "cohort/cohort.h"
#include "collectives/reduce_kernels.h"
#include "common/env_config.h"
#include "common/value_convert.h"

namespace cohort::cli {
namespace {

struct BenchOptions {
  std::string collective;
  uint64_t min_bytes = 8;
  uint64_t max_bytes = 256ull << 20;
  double factor = 2;
  int warmup = 5;
  int iters = 20;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  bool check = true;
  bool inplace = true;
  bool shared_memory = false;  // buffers from cohort::AllocateSharedMemory
};

constexpr char kSynopsis[] = "cohort run -np N -- cohort bench COLLECTIVE [options]";

void PrintUsage() {
  std::fprintf(stdout,
               "usage: %s\n"
               "  COLLECTIVE: allreduce, reducescatter, allgather, broadcast, alltoall\n"
               "  (cohort bench engine --help: a model's gradients through the engine)\n"
               "  -b, --minbytes SIZE   smallest message (default 8; K/M/G suffixes)\n"
               "  -e, --maxbytes SIZE   largest message (default 256M)\n"
               "  -f, --stepfactor F    size multiplier between rows (default 2)\n"
               "  -w, --warmup N        untimed iterations per size (default 5)\n"
               "  -n, --iters N         timed iterations per size (default 20)\n"
               "  -d, --datatype T      uint8 int8 int32 int64 float16 bfloat16 float32 float64\n"
               "  -o, --op OP           sum average min max product (default sum)\n"
               "  -c, --check 0|1       verify results and count wrong elements (default 1)\n"
               "  --out-of-place        separate send and receive buffers (default in place)\n"
               "  --shared-memory       buffers from cohort::AllocateSharedMemory, which the\n"
               "                        ranks of a host map (zero-copy on one host)\n",
               kSynopsis);
}

Status ParseArgs(int argc, char** argv, BenchOptions* o) {
  if (argc < 1) return Status::InvalidArgument("missing COLLECTIVE");
  o->collective = argv[0];
  const std::vector<std::string> known = {"allreduce", "reducescatter", "allgather", "broadcast",
                                          "alltoall"};
  if (std::find(known.begin(), known.end(), o->collective) == known.end()) {
    return Status::InvalidArgument("unknown collective '" + o->collective + "'");
  }
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--out-of-place") {
      o->inplace = false;
      continue;
    }
    if (flag == "--shared-memory") {
      o->shared_memory = true;
      continue;
    }
    if (i + 1 >= argc) return Status::InvalidArgument("flag " + flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "-b" || flag == "--minbytes" || flag == "-e" || flag == "--maxbytes") {
      Result<uint64_t> bytes = ParseByteSize(value);
      if (!bytes.ok()) return bytes.status().WithContext(flag);
      (flag == "-b" || flag == "--minbytes" ? o->min_bytes : o->max_bytes) = *bytes;
    } else if (flag == "-f" || flag == "--stepfactor") {
      Result<double> factor = ParseNonNegativeNumber(flag, value);
      if (!factor.ok()) return factor.status();
      if (*factor <= 1) return Status::InvalidArgument(flag + " must be greater than 1");
      o->factor = *factor;
    } else if (flag == "-w" || flag == "--warmup") {
      Result<int> warmup = ParseNonNegativeInt(flag, value);
      if (!warmup.ok()) return warmup.status();
      o->warmup = *warmup;
    } else if (flag == "-n" || flag == "--iters") {
      Result<int> iters = ParsePositiveInt(flag, value);
      if (!iters.ok()) return iters.status();
      o->iters = *iters;
    } else if (flag == "-d" || flag == "--datatype") {
      Result<DataType> t = ParseDataType(value);
      if (!t.ok()) return t.status();
      o->type = *t;
    } else if (flag == "-o" || flag == "--op") {
      Result<ReduceOp> op = ParseReduceOp(value);
      if (!op.ok()) return op.status();
      if (*op == ReduceOp::kAdasum) {
        return Status::InvalidArgument(
            "--op adasum is not offered by cohort bench (its check "
            "computes element-wise reductions)");
      }
      o->op = *op;
    } else if (flag == "-c" || flag == "--check") {
      o->check = value != "0";
    } else {
      return Status::InvalidArgument("unknown flag " + flag);
    }
  }
  if (o->min_bytes > o->max_bytes) return Status::InvalidArgument("-b is larger than -e");
  return Status::OK();
}

// One benchmarked collective at one size: buffers, the operation, and how to
// check its result.
class Case {
 public:
  Case(const BenchOptions& o, size_t count) : o_(o), n_(Size()), r_(Rank()), count_(count) {
    esize_ = DataTypeSize(o.type);
  }
  Status Allocate() {
    COHORT_RETURN_IF_ERROR(
        send_.Allocate(std::max<size_t>(InCount(), 1) * esize_, o_.shared_memory));
    return recv_.Allocate(std::max<size_t>(OutCount(), 1) * esize_, o_.shared_memory);
  }

  // Elements each rank contributes and receives.
  size_t InCount() const {
    if (o_.collective == "allgather") return count_;
    if (o_.collective == "reducescatter" || o_.collective == "alltoall") return count_ * n_;
    return count_;
  }
  size_t OutCount() const {
    if (o_.collective == "allgather" || o_.collective == "alltoall") return count_ * n_;
    return count_;
  }
  // Bytes the algorithm bandwidth is computed from (as in nccl-tests).
  double AlgBytes() const { return static_cast<double>(std::max(InCount(), OutCount()) * esize_); }
  double BusFactor() const {
    if (o_.collective == "allreduce") return 2.0 * (n_ - 1) / n_;
    if (o_.collective == "broadcast") return 1.0;
    return static_cast<double>(n_ - 1) / n_;
  }
  bool InPlace() const { return o_.inplace && o_.collective == "allreduce"; }

  Status Run() {
    const std::string& c = o_.collective;
    std::vector<size_t> counts(n_, count_);
    if (c == "allreduce") {
      return Allreduce(send_.data(), InPlace() ? send_.data() : recv_.data(), count_, o_.type,
                       AllreduceOptions{o_.op});
    }
    if (c == "reducescatter")
      return ReduceScatter(send_.data(), recv_.data(), counts.data(), o_.type, o_.op);
    if (c == "allgather")
      return Allgather(send_.data(), count_, recv_.data(), counts.data(), o_.type);
    if (c == "broadcast") return Broadcast(send_.data(), count_, o_.type, 0);
    return Alltoall(send_.data(), counts.data(), recv_.data(), counts.data(), o_.type);
  }

  // Fills the inputs with small integers so every reduction is exact.
  void Fill() {
    for (size_t i = 0; i < InCount(); ++i) SetValue(send_.data(), i, Input(r_, i));
  }

  // Runs once on fresh inputs; returns the number of wrong elements.
  Result<size_t> Check() {
    Fill();
    COHORT_RETURN_IF_ERROR(Run());
    const unsigned char* got =
        (InPlace() || o_.collective == "broadcast") ? send_.data() : recv_.data();
    std::vector<unsigned char> want(std::max<size_t>(OutCount(), 1) * esize_);
    for (size_t i = 0; i < OutCount(); ++i) Expected(want.data(), i);
    size_t wrong = 0;
    for (size_t i = 0; i < OutCount(); ++i) {
      wrong += std::memcmp(got + i * esize_, want.data() + i * esize_, esize_) != 0;
    }
    return wrong;
  }

 private:
  double Input(int rank, size_t i) const {
    if (o_.op == ReduceOp::kProduct) return (rank + i) % 3 == 0 ? 2 : 1;
    return static_cast<double>((rank * 7 + i) % 13 + 1);
  }
  void SetValue(unsigned char* buf, size_t i, double v) const {
    StoreAs(o_.type, v, buf + i * esize_);
  }
  // The exact result at output element i.
  void Expected(unsigned char* want, size_t i) const {
    const std::string& c = o_.collective;
    unsigned char* at = want + i * esize_;
    if (c == "broadcast") return SetValue(want, i, Input(0, i));
    if (c == "allgather") return SetValue(want, i, Input(static_cast<int>(i / count_), i % count_));
    if (c == "alltoall") {
      // Block p of my output is block r of rank p's input.
      return SetValue(want, i, Input(static_cast<int>(i / count_), r_ * count_ + i % count_));
    }
    const size_t src = c == "reducescatter" ? r_ * count_ + i : i;
    double acc = Input(0, src);
    for (int p = 1; p < n_; ++p) {
      const double v = Input(p, src);
      switch (o_.op) {
        case ReduceOp::kSum:
        case ReduceOp::kAverage:
          acc += v;
          break;
        case ReduceOp::kMin:
          acc = std::min(acc, v);
          break;
        case ReduceOp::kMax:
          acc = std::max(acc, v);
          break;
        case ReduceOp::kProduct:
          acc *= v;
          break;
        case ReduceOp::kAdasum:
          break;  // refused by the flag parser
      }
    }
    StoreAs(o_.type, acc, at);
    FinishReduction(at, 1, o_.type, o_.op, n_, 1.0);
  }

  const BenchOptions& o_;
  const int n_;
  const int r_;
  const size_t count_;
  size_t esize_;
  BenchBuffer send_;
  BenchBuffer recv_;
};

// Times one size: warm-up, then `iters` runs; the time is the slowest rank's
// average per call.
Status BenchOneSize(const BenchOptions& o, size_t count) {
  Case c(o, count);
  COHORT_RETURN_IF_ERROR(c.Allocate());
  c.Fill();
  for (int i = 0; i < o.warmup; ++i) COHORT_RETURN_IF_ERROR(c.Run());
  COHORT_RETURN_IF_ERROR(Barrier());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iters; ++i) COHORT_RETURN_IF_ERROR(c.Run());
  double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      o.iters;
  COHORT_RETURN_IF_ERROR(
      Allreduce(&us, &us, 1, DataType::kFloat64, AllreduceOptions{ReduceOp::kMax}));
  double wrong = 0;
  if (o.check) {
    Result<size_t> w = c.Check();
    if (!w.ok()) return w.status();
    wrong = static_cast<double>(*w);
    COHORT_RETURN_IF_ERROR(Allreduce(&wrong, &wrong, 1, DataType::kFloat64, AllreduceOptions{}));
  }
  if (Rank() == 0) {
    const double algbw = c.AlgBytes() / us / 1e3;  // bytes/us = MB/s -> GB/s
    std::printf("%12zu %12zu %9s %7s %10.2f %9.3f %9.3f %7s\n", static_cast<size_t>(c.AlgBytes()),
                count, DataTypeName(o.type),
                o.collective == "allreduce" || o.collective == "reducescatter" ? ReduceOpName(o.op)
                                                                               : "none",
                us, algbw, algbw * c.BusFactor(),
                o.check ? std::to_string(static_cast<long long>(wrong)).c_str() : "N/A");
    std::fflush(stdout);
  }
  return Status::OK();
}

Status RunBench(const BenchOptions& o) {
  COHORT_RETURN_IF_ERROR(Init());
  if (Rank() == 0) {
    std::printf("# cohort bench %s: %d ranks (%d per host), %s, %s%s\n", o.collective.c_str(),
                Size(), LocalSize(), DataTypeName(o.type), o.inplace ? "in place" : "out of place",
                o.shared_memory ? ", shared-memory buffers" : "");
    std::printf("#%11s %12s %9s %7s %10s %9s %9s %7s\n", "size", "count", "type", "redop", "time",
                "algbw", "busbw", "#wrong");
    std::printf("#%11s %12s %9s %7s %10s %9s %9s %7s\n", "(B)", "(elements)", "", "", "(us)",
                "(GB/s)", "(GB/s)", "");
    std::fflush(stdout);
  }
  const size_t esize = DataTypeSize(o.type);
  for (double bytes = static_cast<double>(o.min_bytes); bytes <= static_cast<double>(o.max_bytes);
       bytes *= o.factor) {
    size_t per_rank = static_cast<size_t>(bytes) / esize;
    if (o.collective == "reducescatter" || o.collective == "allgather" ||
        o.collective == "alltoall") {
      per_rank /= Size();  // nccl-tests: the size column is the total buffer
    }
    COHORT_RETURN_IF_ERROR(BenchOneSize(o, per_rank));
  }
  return Shutdown();
}

}  // namespace

int BenchCommand(int argc, char** argv) {
  if (argc >= 1 && std::strcmp(argv[0], "engine") == 0)
    return EngineBenchCommand(argc - 1, argv + 1);
  if (argc >= 1 && (std::strcmp(argv[0], "--help") == 0 || std::strcmp(argv[0], "-h") == 0)) {
    PrintUsage();
    return 0;
  }
  BenchOptions options;
  Status parsed = ParseArgs(argc, argv, &options);
  if (!parsed.ok()) return UsageError("bench", parsed.message(), kSynopsis);
  Status s = RunBench(options);
  if (!s.ok()) {
    std::fprintf(stderr, "cohort bench: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace cohort::cli
