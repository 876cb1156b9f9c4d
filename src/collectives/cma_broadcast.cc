// Single-copy broadcast among the ranks of one host: the root publishes
// where its buffer is and every other rank reads it straight into its own,
// one copy per rank (the chain over the shared-memory links copies each byte
// into a ring and out again at every hop). The root returns once every rank
// has read it.
#include "collectives/cma_call.h"
#include "collectives/cma_collectives.h"

namespace cohort {

Status CmaBroadcast(Communicator& comm, void* buf, size_t bytes, int root,
                    const CallHeader& header) {
  CmaCall call(comm, "broadcast");
  const uint64_t mine = reinterpret_cast<uintptr_t>(buf);
  COHORT_RETURN_IF_ERROR(call.Start({CmaPiece{mine, mine, bytes}}, 1, header));
  const int root_local = comm.mesh().peers[root].local_rank;
  if (call.me() != root_local && bytes > 0) {
    COHORT_RETURN_IF_ERROR(
        call.Read(root_local, buf, {RemoteRange{call.pieces(root_local)[0].send, bytes}}));
  }
  return call.Finish();
}

}  // namespace cohort
