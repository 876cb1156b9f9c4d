// Pipelined chain broadcast: each rank forwards a chunk to its successor as
// soon as it has received it from its predecessor.
#include <algorithm>

#include "collectives/broadcast.h"
#include "collectives/transfers.h"

namespace cohort {

Status ChainBroadcast(Communicator& comm, void* buf, size_t bytes, int root,
                      const CallHeader& header) {
  const int n = comm.size();
  const int v = (comm.rank() - root + n) % n;
  const int prev = v == 0 ? -1 : (comm.rank() - 1 + n) % n;
  const int next = v == n - 1 ? -1 : (comm.rank() + 1) % n;
  const size_t chunk = comm.options().chunk_bytes;
  const size_t chunks = (bytes + chunk - 1) / chunk;
  auto* data = static_cast<unsigned char*>(buf);
  Transfers transfers(comm, "broadcast");
  // Headers go down the chain too: each rank checks its predecessor's.
  if (prev >= 0) transfers.PostHeaderCheck(prev, prev, header, header);
  if (next >= 0) transfers.PostHeaderCheck(next, next, header, header);
  size_t base = prev >= 0 ? transfers.recvs_posted(prev) : 0;
  if (prev >= 0) {
    for (size_t c = 0; c < chunks; ++c) {
      transfers.PostRecv(prev, data + c * chunk, std::min(chunk, bytes - c * chunk));
    }
  }
  size_t forwarded = 0;
  while (next >= 0 && forwarded < chunks) {
    size_t have = chunks;
    if (prev >= 0) {
      const size_t done = transfers.recvs_done(prev);
      have = done > base ? done - base : 0;
    }
    for (; forwarded < have; ++forwarded) {
      transfers.PostSend(next, data + forwarded * chunk, std::min(chunk, bytes - forwarded * chunk));
    }
    if (forwarded < chunks) COHORT_RETURN_IF_ERROR(transfers.Progress());
  }
  return transfers.WaitAll();
}

}  // namespace cohort
