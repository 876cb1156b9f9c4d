// cohort dtypes and ops to NCCL's (nccl_mapping.h).
#include "gpu/transport/nccl_mapping.h"

#include "gpu/cuda_declarations.h"

namespace cohort::gpu {

std::optional<int> NcclDataType(DataType type) {
  switch (type) {
    case DataType::kUInt8:
      return abi::ncclUint8;
    case DataType::kInt8:
      return abi::ncclInt8;
    case DataType::kInt32:
      return abi::ncclInt32;
    case DataType::kInt64:
      return abi::ncclInt64;
    case DataType::kFloat16:
      return abi::ncclFloat16;
    case DataType::kBFloat16:
      return abi::ncclBfloat16;
    case DataType::kFloat32:
      return abi::ncclFloat32;
    case DataType::kFloat64:
      return abi::ncclFloat64;
    case DataType::kInt16:
    case DataType::kBool:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<int> NcclReduceOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      return abi::ncclSum;
    case ReduceOp::kMin:
      return abi::ncclMin;
    case ReduceOp::kMax:
      return abi::ncclMax;
    case ReduceOp::kProduct:
      return abi::ncclProd;
    case ReduceOp::kAdasum:
      return std::nullopt;
  }
  return std::nullopt;
}

bool NcclTakesReduction(DataType type, ReduceOp op) {
  return NcclDataType(type).has_value() && NcclReduceOp(op).has_value();
}

}  // namespace cohort::gpu
