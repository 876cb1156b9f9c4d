// Alltoall and barrier over links.
#ifndef COHORT_COLLECTIVES_ALLTOALL_H_
#define COHORT_COLLECTIVES_ALLTOALL_H_

#include "collectives/call_header.h"
#include "collectives/communicator.h"

namespace cohort {

Status PairwiseAlltoall(Communicator& comm, const void* send, const size_t* send_counts,
                        void* recv, const size_t* recv_counts, DataType type,
                        const CallHeader& header);

// Dissemination barrier: ceil(log2 n) rounds; in round k each rank signals
// rank + 2^k and waits for rank - 2^k. The signal is the call header itself.
Status DisseminationBarrier(Communicator& comm, const CallHeader& header);

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_ALLTOALL_H_
