// CmaCall: what the single-copy collectives (cma_collectives.h) share about
// one call among the ranks of a host. Each rank publishes where its buffers
// are (a table of pieces in its slot of the call's chunk, beside the call
// header), waits for every peer's table and compares the headers; then it
// copies straight from and into the peers' memory (net/cma.h), and at the
// end waits until no peer touches its buffers any more.
//
// A call takes one chunk number g of the shared-memory counters
// (shm_peers.h): in = g+1 once the table is out, reduced = g+1 once this
// rank is done with the peers' memory, out = g+1 once every peer is done
// with this rank's; so the counters stay equal across calls, as the two-copy
// algorithms expect.
//
// Buffers in shared regions (shared_buffers.h): each rank also publishes the
// regions that hold its pieces; where a peer can map one, Read and Write
// copy with memcpy and Direct gives the reduction a pointer into the peer's
// buffer, with no system call. Everything else goes through CMA.
//
// A failed copy fails the communicator: the peer's exit is a peer failure
// naming it, anything else (the kernel's refusal after the probe said yes,
// a bad address) an I/O error naming the peer.
#ifndef COHORT_COLLECTIVES_CMA_CALL_H_
#define COHORT_COLLECTIVES_CMA_CALL_H_

#include <sys/uio.h>

#include <cstdint>
#include <vector>

#include "collectives/call_header.h"
#include "collectives/communicator.h"
#include "collectives/shared_buffers.h"
#include "collectives/shm_peers.h"
#include "net/cma.h"

namespace cohort {

// One buffer of a rank's side of the call, as addresses in its process.
struct CmaPiece {
  uint64_t send;
  uint64_t recv;
  uint64_t count;  // elements
};

class CmaCall {
 public:
  // Requires comm.mesh().single_copy and all_local_shm(). `what` names the
  // collective in errors and must outlive this object.
  CmaCall(Communicator& comm, const char* what);

  // How many pieces a rank may publish (they share one slot).
  static size_t MaxPieces(const Mesh& mesh);

  // Publishes `mine` (counts of `esize` bytes) and the shared regions that
  // hold them, and `header` (header.path must be kSingleCopy); waits for
  // every peer's and checks that the headers agree.
  Status Start(const std::vector<CmaPiece>& mine, size_t esize, const CallHeader& header);
  ShmPeers& peers() { return peers_; }
  int size() const { return peers_.size(); }
  int me() const { return peers_.me(); }
  // Local rank l's pieces (valid from Start until Finish).
  const CmaPiece* pieces(int l) { return reinterpret_cast<const CmaPiece*>(Table(l) + 1); }

  // Local rank l's bytes [addr, addr + bytes) (an address in its process)
  // mapped here, or null when they are not in a region this rank can map.
  unsigned char* Direct(int l, uint64_t addr, size_t bytes);

  // Copies from / into local rank l's memory; errors fail the communicator.
  Status Read(int l, void* local, const std::vector<RemoteRange>& remote);
  Status Write(int l, const std::vector<iovec>& local, const std::vector<RemoteRange>& remote);

  // This rank is done with the peers' memory; waits until every peer is done
  // with this rank's (its buffers may be used again once this returns).
  Status Finish();

 private:
  // Local rank l's table: [pieces][CmaPiece x pieces][regions][SharedRef x regions].
  uint64_t* Table(int l) { return reinterpret_cast<uint64_t*>(peers_.Slot(l, g_)); }
  uint64_t* Regions(int l) { return Table(l) + 1 + Table(l)[0] * (sizeof(CmaPiece) / 8); }
  Status CopyFailed(int l, const Status& status, int error_number);
  // Reads `*remote` of local rank l into `local` with CMA and empties it.
  Status ReadCma(int l, void* local, std::vector<RemoteRange>* remote);

  Communicator& comm_;
  ShmPeers peers_;
  const char* what_;
  uint64_t g_ = 0;
};

}  // namespace cohort

#endif  // COHORT_COLLECTIVES_CMA_CALL_H_
