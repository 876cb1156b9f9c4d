// cohort's dtypes and ops in NCCL's terms, and which calls NCCL takes at
// all. NCCL has no int16 and no logical bool; Adasum is cohort's own. What
// NCCL does not take runs on another transport (transport_choice.h).
// Average is NCCL's sum followed by cohort's finishing kernel (the CPU
// path's truncating integer division), not ncclAvg.
#ifndef COHORT_GPU_TRANSPORT_NCCL_MAPPING_H_
#define COHORT_GPU_TRANSPORT_NCCL_MAPPING_H_

#include <optional>

#include "cohort/types.h"

namespace cohort::gpu {

std::optional<int> NcclDataType(DataType type);
std::optional<int> NcclReduceOp(ReduceOp op);
// Whether an allreduce or reduce-scatter of `type` with `op` can run on NCCL.
bool NcclTakesReduction(DataType type, ReduceOp op);
// Whether a data movement (allgather, broadcast) of `type` can (any dtype
// moves as bytes).
inline bool NcclTakesMovement(DataType) { return true; }

}  // namespace cohort::gpu

#endif  // COHORT_GPU_TRANSPORT_NCCL_MAPPING_H_
