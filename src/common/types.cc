// Names, sizes and parsing of DataType and ReduceOp.
#include "cohort/types.h"

namespace cohort {

size_t DataTypeSize(DataType type) {
  switch (type) {
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kBool: return 1;
    case DataType::kInt16:
    case DataType::kFloat16:
    case DataType::kBFloat16: return 2;
    case DataType::kInt32:
    case DataType::kFloat32: return 4;
    case DataType::kInt64:
    case DataType::kFloat64: return 8;
  }
  return 0;
}

const char* DataTypeName(DataType type) {
  switch (type) {
    case DataType::kUInt8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
    case DataType::kInt16: return "int16";
    case DataType::kBool: return "bool";
  }
  return "invalid";
}

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAverage: return "average";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kProduct: return "product";
    case ReduceOp::kAdasum: return "adasum";
  }
  return "invalid";
}

Result<DataType> ParseDataType(const std::string& name) {
  for (int i = 0; i < kNumDataTypes; ++i) {
    if (name == DataTypeName(static_cast<DataType>(i))) return static_cast<DataType>(i);
  }
  if (name == "float" || name == "fp32") return DataType::kFloat32;
  if (name == "half" || name == "fp16") return DataType::kFloat16;
  if (name == "bf16") return DataType::kBFloat16;
  if (name == "double" || name == "fp64") return DataType::kFloat64;
  if (name == "short") return DataType::kInt16;
  return Status::InvalidArgument("unknown data type '" + name +
                                 "' (expected uint8, int8, int16, int32, int64, float16, "
                                 "bfloat16, float32, float64 or bool)");
}

Result<ReduceOp> ParseReduceOp(const std::string& name) {
  for (int i = 0; i < kNumReduceOps; ++i) {
    if (name == ReduceOpName(static_cast<ReduceOp>(i))) return static_cast<ReduceOp>(i);
  }
  if (name == "avg") return ReduceOp::kAverage;
  if (name == "prod") return ReduceOp::kProduct;
  return Status::InvalidArgument("unknown reduce op '" + name +
                                 "' (expected sum, average, min, max, product or adasum)");
}

bool IsFloatingPoint(DataType type) {
  return type == DataType::kFloat16 || type == DataType::kBFloat16 ||
         type == DataType::kFloat32 || type == DataType::kFloat64;
}

bool IsValidDataType(int value) { return value >= 0 && value < kNumDataTypes; }
bool IsValidReduceOp(int value) { return value >= 0 && value < kNumReduceOps; }

}  // namespace cohort
