// Adasum allreduce: adaptive summation of the ranks' vectors (Maleki et al.,
// "Scaling Distributed Training with Adaptive Summation", MLSys 2021).
#ifndef COHORT_COLLECTIVES_ADASUM_ALLREDUCE_H_
#define COHORT_COLLECTIVES_ADASUM_ALLREDUCE_H_

#include <cstddef>

#include "collectives/call_header.h"
#include "collectives/communicator.h"

namespace cohort {

// Two vectors combine as
//   Adasum(a, b) = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
// (a coefficient stays 1 where |x|^2 < 1e-8, as in Horovod), and n ranks'
// vectors as a binary tree of such pairs: with n a power of two, ranks r and
// r ^ 1 first, then those pairs' results with distance 2, and so on. The
// tree runs as Horovod's recursive vector halving: at each level a rank
// swaps half of its current segment with its partner and combines the half
// it keeps, with dot products summed over the ranks that hold the other
// pieces; the pieces are gathered back at the end. For n not a power of two
// the first 2 * (n - p) ranks (p the largest power of two below n) pair up
// first: each even one hands its vector to its odd neighbour, which combines
// the two, and gets the result back at the end.
//
// In place on `buf` (this rank's pre-scaled input), `count` elements of a
// floating-point `type` (float16 and bfloat16 are computed in float32, dot
// products in double); every rank ends with bit-identical results, multiplied
// by `postscale`.
Status AdasumAllreduce(Communicator& comm, void* buf, size_t count, DataType type, double postscale,
                       const CallHeader& header);

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_ADASUM_ALLREDUCE_H_
