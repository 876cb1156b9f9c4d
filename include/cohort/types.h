// Element types and reduction operators understood by every collective.
#ifndef COHORT_TYPES_H_
#define COHORT_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cohort/status.h"

namespace cohort {

// The numeric values are part of the C ABI (c_api.h); never renumber.
enum class DataType : int {
  kUInt8 = 0,
  kInt8 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kFloat16 = 4,   // IEEE 754 binary16; reduced in float32
  kBFloat16 = 5,  // bfloat16; reduced in float32
  kFloat32 = 6,
  kFloat64 = 7,
  kInt16 = 8,
  kBool = 9,  // one byte, 0 or 1; reductions are logical (see reduce_kernels.h)
};
inline constexpr int kNumDataTypes = 10;

// The numeric values are part of the C ABI (c_api.h); never renumber.
enum class ReduceOp : int {
  kSum = 0,
  kAverage = 1,  // sum divided by the number of ranks (integer types: truncating division)
  kMin = 2,
  kMax = 3,
  kProduct = 4,
  // Adaptive summation (Maleki et al. 2021), floating-point types only: pairs
  // of ranks' vectors a, b combine as (1 - a.b/2|a|^2) a + (1 - a.b/2|b|^2) b
  // over a recursive vector-halving tree (collectives/adasum_allreduce.h).
  kAdasum = 5,
};
inline constexpr int kNumReduceOps = 6;

// Lossy compression of float32 data for transfer: values are rounded to 16
// bits, reduced in float32 arithmetic and widened back. Other dtypes are sent
// as they are. The numeric values are part of the C ABI; never renumber.
enum class Compression : int { kNone = 0, kFloat16 = 1, kBFloat16 = 2 };

// The process set of every rank of the job (cohort.h, Process sets).
inline constexpr int kGlobalProcessSet = 0;

// A tensor's dimensions, outermost first.
using Shape = std::vector<int64_t>;

// The output of a completed allgather, reduce-scatter, alltoall or join
// (operations whose result size only the collective knows).
struct TensorResult {
  std::vector<unsigned char> data;
  Shape shape;
  std::vector<int64_t> received_splits;  // alltoall: rows received from each rank
  int64_t last_joined_rank = -1;         // join: the last rank to join
};

// Bytes per element.
size_t DataTypeSize(DataType type);
// "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64",
// "int16", "bool".
const char* DataTypeName(DataType type);
// "sum", "average", "min", "max", "product", "adasum".
const char* ReduceOpName(ReduceOp op);

// Parse the names above (also "float"/"half"/"double"/"avg"/"prod").
Result<DataType> ParseDataType(const std::string& name);
Result<ReduceOp> ParseReduceOp(const std::string& name);

// float16, bfloat16, float32 or float64.
bool IsFloatingPoint(DataType type);

// True when `value` is a valid enumerator (used to check values crossing the C ABI).
bool IsValidDataType(int value);
bool IsValidReduceOp(int value);

// What this rank's engine has run since it started, over every process set:
// how well small allreduces were fused. Counters only grow; cohort.track
// logs their change per training step.
struct EngineStats {
  uint64_t cycles = 0;              // negotiation rounds that agreed on collectives
  uint64_t allreduces = 0;          // allreduce collectives run (a fused one counts once)
  uint64_t allreduced_tensors = 0;  // tensors those reduced
  uint64_t fused_allreduces = 0;    // allreduces that reduced more than one tensor
  uint64_t fused_tensors = 0;       // tensors in those
  uint64_t fused_bytes = 0;         // bytes in those
};

// One float32 gradient matrix of PowerSGD and its error-feedback memory
// (cohort.h, PowerSgdProject): `m` is rows x cols, row-major; `error` (null:
// no error feedback) has its shape and does not overlap it; the
// approximation's rank is `rank`. Every size is at least 1.
struct PowerSgdMatrix {
  float* m = nullptr;
  float* error = nullptr;
  size_t rows = 0;
  size_t cols = 0;
  size_t rank = 0;
};

}  // namespace cohort

#endif  // COHORT_TYPES_H_
