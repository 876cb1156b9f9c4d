// Binomial-tree broadcast: in round k, every rank that already has the data
// (virtual rank v < 2^k, counted from the root) sends it to v + 2^k.
#include "collectives/broadcast.h"
#include "collectives/transfers.h"

namespace cohort {

Status BinomialTreeBroadcast(Communicator& comm, void* buf, size_t bytes, int root,
                             const CallHeader& header) {
  const int n = comm.size();
  const int v = (comm.rank() - root + n) % n;
  auto real = [&](int vr) { return (vr + root) % n; };
  Transfers transfers(comm, "broadcast");
  int mask = 1;
  while (mask < n && !(v & mask)) mask <<= 1;
  if (v != 0) {  // receive from the parent: clear my lowest set bit
    const int parent = real(v - mask);
    transfers.PostHeaderCheck(parent, parent, header, header);
    transfers.PostRecv(parent, buf, bytes);
    COHORT_RETURN_IF_ERROR(transfers.WaitAll());
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (v + mask < n) {
      const int child = real(v + mask);
      transfers.PostHeaderCheck(child, child, header, header);
      transfers.PostSend(child, buf, bytes);
    }
  }
  return transfers.WaitAll();
}

}  // namespace cohort
