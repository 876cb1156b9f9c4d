// Element types and reduction operators understood by every collective.
#ifndef COHORT_TYPES_H_
#define COHORT_TYPES_H_

#include <cstddef>
#include <string>

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
};
inline constexpr int kNumDataTypes = 8;

// The numeric values are part of the C ABI (c_api.h); never renumber.
enum class ReduceOp : int {
  kSum = 0,
  kAverage = 1,  // sum divided by the number of ranks (integer types: truncating division)
  kMin = 2,
  kMax = 3,
  kProduct = 4,
};
inline constexpr int kNumReduceOps = 5;

// Bytes per element.
size_t DataTypeSize(DataType type);
// "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64".
const char* DataTypeName(DataType type);
// "sum", "average", "min", "max", "product".
const char* ReduceOpName(ReduceOp op);

// Parse the names above (also "float"/"half"/"double"/"avg"/"prod").
Result<DataType> ParseDataType(const std::string& name);
Result<ReduceOp> ParseReduceOp(const std::string& name);

// True when `value` is a valid enumerator (used to check values crossing the C ABI).
bool IsValidDataType(int value);
bool IsValidReduceOp(int value);

}  // namespace cohort

#endif  // COHORT_TYPES_H_
