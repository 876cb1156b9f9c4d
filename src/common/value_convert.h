// Reading and writing one element of any DataType as a double: for
// benchmarks, tests and messages, never for bulk data (see
// collectives/reduce_kernels.h for that). Integers are truncated toward
// zero and saturated; float16/bfloat16 round to nearest even.
#ifndef COHORT_COMMON_VALUE_CONVERT_H_
#define COHORT_COMMON_VALUE_CONVERT_H_

#include "cohort/types.h"

namespace cohort {

void StoreAs(DataType type, double value, void* dst);
double LoadAs(DataType type, const void* src);

}  // namespace cohort

#endif  // COHORT_COMMON_VALUE_CONVERT_H_
