// Dissemination barrier (see alltoall.h).
#include "collectives/alltoall.h"
#include "collectives/transfers.h"

namespace cohort {

Status DisseminationBarrier(Communicator& comm, const CallHeader& header) {
  const int n = comm.size();
  const int r = comm.rank();
  Transfers transfers(comm, "barrier");
  for (int dist = 1; dist < n; dist *= 2) {
    transfers.PostHeaderCheck((r + dist) % n, (r - dist + n) % n, header, header);
    COHORT_RETURN_IF_ERROR(transfers.WaitAll());
  }
  return Status::OK();
}

}  // namespace cohort
