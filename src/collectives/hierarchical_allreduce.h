// Hierarchical allreduce for jobs that span several hosts with several ranks
// each: reduce within each host, reduce across hosts, share within each host.
// See hierarchical_allreduce.cc for the algorithm.
#ifndef COHORT_COLLECTIVES_HIERARCHICAL_ALLREDUCE_H_
#define COHORT_COLLECTIVES_HIERARCHICAL_ALLREDUCE_H_

#include "collectives/call_header.h"
#include "collectives/communicator.h"

namespace cohort {

// OK when every host of `mesh` has the same number of ranks, which the
// algorithm needs (local rank l of every host works on the same slice);
// otherwise an error saying which hosts differ.
Status CheckHierarchicalLayout(const Mesh& mesh);

// Allreduce of `buf` (already prescaled) in place. Requires
// CheckHierarchicalLayout(comm.mesh()) to be OK.
// `wire` (kFloat16 or kBFloat16, `type` kFloat32): compression once per
// host. The host's partial sums are reduced in float32 within the host, and
// only the slices that cross hosts travel as 16 bits: one rounding per host
// instead of one per rank, and no conversion work on the host-local phases.
Status HierarchicalAllreduce(Communicator& comm, void* buf, size_t count, DataType type,
                             ReduceOp op, double postscale, const CallHeader& header,
                             DataType wire = DataType::kFloat32);

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_HIERARCHICAL_ALLREDUCE_H_
