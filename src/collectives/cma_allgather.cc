// Single-copy allgather among the ranks of one host: each rank publishes
// where its output is (its own block already holds its input) and reads
// every other rank's block straight out of that rank's output into its own,
// one copy per block instead of into a slot and out again. A block is read
// only after its owner published (so it is in place), and no rank writes
// another's memory, so only the end waits: until every rank has read this
// rank's block.
#include "collectives/cma_call.h"
#include "collectives/cma_collectives.h"

namespace cohort {

Status CmaAllgather(Communicator& comm, void* recv, const std::vector<size_t>& offsets,
                    DataType type, const CallHeader& header) {
  CmaCall call(comm, "allgather");
  const uint64_t total = offsets.back();
  const uint64_t mine = reinterpret_cast<uintptr_t>(recv);
  const size_t esize = DataTypeSize(type);
  COHORT_RETURN_IF_ERROR(call.Start({CmaPiece{mine, mine, total}}, esize, header));
  const int n = call.size();
  for (int step = 1; step < n; ++step) {
    const int l = (call.me() + step) % n;  // spread the reads over the owners
    const int rank = call.peers().rank_of(l);
    const size_t at = offsets[rank] * esize, bytes = (offsets[rank + 1] - offsets[rank]) * esize;
    if (bytes == 0) continue;
    COHORT_RETURN_IF_ERROR(call.Read(l, static_cast<unsigned char*>(recv) + at,
                                     {RemoteRange{call.pieces(l)[0].recv + at, bytes}}));
  }
  return call.Finish();
}

}  // namespace cohort
