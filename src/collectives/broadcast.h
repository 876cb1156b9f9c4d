// Broadcast algorithms over links.
#ifndef COHORT_COLLECTIVES_BROADCAST_H_
#define COHORT_COLLECTIVES_BROADCAST_H_

#include "collectives/call_header.h"
#include "collectives/communicator.h"

namespace cohort {

// Binomial tree: ceil(log2 n) rounds; for small messages.
Status BinomialTreeBroadcast(Communicator& comm, void* buf, size_t bytes, int root,
                             const CallHeader& header);
// Chain root -> root+1 -> ... pipelined in chunks: every link carries the
// message once, so time approaches bytes / link bandwidth; for large messages.
Status ChainBroadcast(Communicator& comm, void* buf, size_t bytes, int root,
                      const CallHeader& header);

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_BROADCAST_H_
