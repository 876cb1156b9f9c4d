// Element-wise reduction kernels for every DataType and ReduceOp.
//
// Integer sums and products wrap around (two's complement); integer average
// is the sum divided by the rank count, truncated toward zero; scale factors
// on integers are applied in double precision, truncated toward zero and
// saturated to the type's range. float16 and bfloat16 are computed in float32
// and rounded back to nearest-even after each operation. bool is logical:
// Sum, Average and Max are "or", Min and Product are "and"; scaling by a
// non-zero factor keeps a value and by zero clears it.
//
// The loops are compiled twice (generic x86-64 and AVX2) and the variant is
// picked once per process from the CPU's features.
#ifndef COHORT_COLLECTIVES_REDUCE_KERNELS_H_
#define COHORT_COLLECTIVES_REDUCE_KERNELS_H_

#include <cstddef>

#include "cohort/types.h"

namespace cohort {

// dst[i] = a[i] op b[i]; dst may alias a or b. kAverage reduces like kSum
// (the division happens once, in FinishReduction).
void ReduceTwo(void* dst, const void* a, const void* b, size_t count, DataType type, ReduceOp op);

// dst[i] = src[i] * factor; dst may alias src. factor == 1 copies (or does nothing in place).
void ScaleCopy(void* dst, const void* src, size_t count, DataType type, double factor);

// Applies what remains after the element-wise reduction over `nranks` ranks:
// the division for kAverage, then the post-scale factor.
void FinishReduction(void* buf, size_t count, DataType type, ReduceOp op, int nranks,
                     double postscale);

// Converts `count` float32 values to float16 or bfloat16 (round to nearest
// even), or back. Only those pairs: the compression of float32 gradients.
void ConvertFloat32To16(void* dst, DataType dst_type, const float* src, size_t count);
void Convert16ToFloat32(float* dst, const void* src, DataType src_type, size_t count);

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_REDUCE_KERNELS_H_
